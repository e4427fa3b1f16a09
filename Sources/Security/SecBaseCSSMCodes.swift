// Apple's result codes (SecBase.h), with Apple's names and values: the codes taken over from CSSM,
// -67585 to -67742 (the rest are in SecBaseCSSMCodes2.swift).
// The doc comment of each is the text `SecCopyErrorMessageString` returns for it
// (SecErrorMessages.swift).

/// The required service is not available.
public let errSecServiceNotAvailable: OSStatus = -67585
/// The client ID is not correct.
public let errSecInsufficientClientID: OSStatus = -67586
/// A device reset has occurred.
public let errSecDeviceReset: OSStatus = -67587
/// A device failure has occurred.
public let errSecDeviceFailed: OSStatus = -67588
/// Adding an application ACL subject failed.
public let errSecAppleAddAppACLSubject: OSStatus = -67589
/// The public key is incomplete.
public let errSecApplePublicKeyIncomplete: OSStatus = -67590
/// A signature mismatch has occurred.
public let errSecAppleSignatureMismatch: OSStatus = -67591
/// The specified key has an invalid start date.
public let errSecAppleInvalidKeyStartDate: OSStatus = -67592
/// The specified key has an invalid end date.
public let errSecAppleInvalidKeyEndDate: OSStatus = -67593
/// A conversion error has occurred.
public let errSecConversionError: OSStatus = -67594
/// A SSLv2 rollback error has occurred.
public let errSecAppleSSLv2Rollback: OSStatus = -67595
/// The quota was exceeded.
public let errSecQuotaExceeded: OSStatus = -67596
/// The file is too big.
public let errSecFileTooBig: OSStatus = -67597
/// The specified database has an invalid blob.
public let errSecInvalidDatabaseBlob: OSStatus = -67598
/// The specified database has an invalid key blob.
public let errSecInvalidKeyBlob: OSStatus = -67599
/// The specified database has an incompatible blob.
public let errSecIncompatibleDatabaseBlob: OSStatus = -67600
/// The specified database has an incompatible key blob.
public let errSecIncompatibleKeyBlob: OSStatus = -67601
/// A host name mismatch has occurred.
public let errSecHostNameMismatch: OSStatus = -67602
/// There is an unknown critical extension flag.
public let errSecUnknownCriticalExtensionFlag: OSStatus = -67603
/// No basic constraints were found.
public let errSecNoBasicConstraints: OSStatus = -67604
/// No basic CA constraints were found.
public let errSecNoBasicConstraintsCA: OSStatus = -67605
/// The authority key ID is not valid.
public let errSecInvalidAuthorityKeyID: OSStatus = -67606
/// The subject key ID is not valid.
public let errSecInvalidSubjectKeyID: OSStatus = -67607
/// The key usage is not valid for the specified policy.
public let errSecInvalidKeyUsageForPolicy: OSStatus = -67608
/// The extended key usage is not valid.
public let errSecInvalidExtendedKeyUsage: OSStatus = -67609
/// The ID linkage is not valid.
public let errSecInvalidIDLinkage: OSStatus = -67610
/// The path length constraint was exceeded.
public let errSecPathLengthConstraintExceeded: OSStatus = -67611
/// The root or anchor certificate is not valid.
public let errSecInvalidRoot: OSStatus = -67612
/// The CRL has expired.
public let errSecCRLExpired: OSStatus = -67613
/// The CRL is not yet valid.
public let errSecCRLNotValidYet: OSStatus = -67614
/// The CRL was not found.
public let errSecCRLNotFound: OSStatus = -67615
/// The CRL server is down.
public let errSecCRLServerDown: OSStatus = -67616
/// The CRL has a bad Uniform Resource Identifier.
public let errSecCRLBadURI: OSStatus = -67617
/// An unknown certificate extension was encountered.
public let errSecUnknownCertExtension: OSStatus = -67618
/// An unknown CRL extension was encountered.
public let errSecUnknownCRLExtension: OSStatus = -67619
/// The CRL is not trusted.
public let errSecCRLNotTrusted: OSStatus = -67620
/// The CRL policy failed.
public let errSecCRLPolicyFailed: OSStatus = -67621
/// The issuing distribution point was not valid.
public let errSecIDPFailure: OSStatus = -67622
/// An email address mismatch was encountered.
public let errSecSMIMEEmailAddressesNotFound: OSStatus = -67623
/// The appropriate extended key usage for SMIME was not found.
public let errSecSMIMEBadExtendedKeyUsage: OSStatus = -67624
/// The key usage is not compatible with SMIME.
public let errSecSMIMEBadKeyUsage: OSStatus = -67625
/// The key usage extension is not marked as critical.
public let errSecSMIMEKeyUsageNotCritical: OSStatus = -67626
/// No email address was found in the certificate.
public let errSecSMIMENoEmailAddress: OSStatus = -67627
/// The subject alternative name extension is not marked as critical.
public let errSecSMIMESubjAltNameNotCritical: OSStatus = -67628
/// The appropriate extended key usage for SSL was not found.
public let errSecSSLBadExtendedKeyUsage: OSStatus = -67629
/// The OCSP response was incorrect or could not be parsed.
public let errSecOCSPBadResponse: OSStatus = -67630
/// The OCSP request was incorrect or could not be parsed.
public let errSecOCSPBadRequest: OSStatus = -67631
/// OCSP service is unavailable.
public let errSecOCSPUnavailable: OSStatus = -67632
/// The OCSP server did not recognize this certificate.
public let errSecOCSPStatusUnrecognized: OSStatus = -67633
/// An end-of-data was detected.
public let errSecEndOfData: OSStatus = -67634
/// An incomplete certificate revocation check occurred.
public let errSecIncompleteCertRevocationCheck: OSStatus = -67635
/// A network failure occurred.
public let errSecNetworkFailure: OSStatus = -67636
/// The OCSP response was not trusted to a root or anchor certificate.
public let errSecOCSPNotTrustedToAnchor: OSStatus = -67637
/// The record was modified.
public let errSecRecordModified: OSStatus = -67638
/// The OCSP response had an invalid signature.
public let errSecOCSPSignatureError: OSStatus = -67639
/// The OCSP response had no signer.
public let errSecOCSPNoSigner: OSStatus = -67640
/// The OCSP responder was given a malformed request.
public let errSecOCSPResponderMalformedReq: OSStatus = -67641
/// The OCSP responder encountered an internal error.
public let errSecOCSPResponderInternalError: OSStatus = -67642
/// The OCSP responder is busy, try again later.
public let errSecOCSPResponderTryLater: OSStatus = -67643
/// The OCSP responder requires a signature.
public let errSecOCSPResponderSignatureRequired: OSStatus = -67644
/// The OCSP responder rejected this request as unauthorized.
public let errSecOCSPResponderUnauthorized: OSStatus = -67645
/// The OCSP response nonce did not match the request.
public let errSecOCSPResponseNonceMismatch: OSStatus = -67646
/// Code signing encountered an incorrect certificate chain length.
public let errSecCodeSigningBadCertChainLength: OSStatus = -67647
/// Code signing found no basic constraints.
public let errSecCodeSigningNoBasicConstraints: OSStatus = -67648
/// Code signing encountered an incorrect path length constraint.
public let errSecCodeSigningBadPathLengthConstraint: OSStatus = -67649
/// Code signing found no extended key usage.
public let errSecCodeSigningNoExtendedKeyUsage: OSStatus = -67650
/// Code signing indicated use of a development-only certificate.
public let errSecCodeSigningDevelopment: OSStatus = -67651
/// Resource signing has encountered an incorrect certificate chain length.
public let errSecResourceSignBadCertChainLength: OSStatus = -67652
/// Resource signing has encountered an error in the extended key usage.
public let errSecResourceSignBadExtKeyUsage: OSStatus = -67653
/// The trust setting for this policy was set to Deny.
public let errSecTrustSettingDeny: OSStatus = -67654
/// An invalid certificate subject name was encountered.
public let errSecInvalidSubjectName: OSStatus = -67655
/// An unknown qualified certificate statement was encountered.
public let errSecUnknownQualifiedCertStatement: OSStatus = -67656
/// No message in Apple's header: `SecCopyErrorMessageString` gives "OSStatus -67657".
public let errSecMobileMeRequestQueued: OSStatus = -67657
/// No message in Apple's header: `SecCopyErrorMessageString` gives "OSStatus -67658".
public let errSecMobileMeRequestRedirected: OSStatus = -67658
/// No message in Apple's header: `SecCopyErrorMessageString` gives "OSStatus -67659".
public let errSecMobileMeServerError: OSStatus = -67659
/// No message in Apple's header: `SecCopyErrorMessageString` gives "OSStatus -67660".
public let errSecMobileMeServerNotAvailable: OSStatus = -67660
/// No message in Apple's header: `SecCopyErrorMessageString` gives "OSStatus -67661".
public let errSecMobileMeServerAlreadyExists: OSStatus = -67661
/// No message in Apple's header: `SecCopyErrorMessageString` gives "OSStatus -67662".
public let errSecMobileMeServerServiceErr: OSStatus = -67662
/// No message in Apple's header: `SecCopyErrorMessageString` gives "OSStatus -67663".
public let errSecMobileMeRequestAlreadyPending: OSStatus = -67663
/// No message in Apple's header: `SecCopyErrorMessageString` gives "OSStatus -67664".
public let errSecMobileMeNoRequestPending: OSStatus = -67664
/// No message in Apple's header: `SecCopyErrorMessageString` gives "OSStatus -67665".
public let errSecMobileMeCSRVerifyFailure: OSStatus = -67665
/// No message in Apple's header: `SecCopyErrorMessageString` gives "OSStatus -67666".
public let errSecMobileMeFailedConsistencyCheck: OSStatus = -67666
/// A function was called without initializing CSSM.
public let errSecNotInitialized: OSStatus = -67667
/// The CSSM handle does not match with the service type.
public let errSecInvalidHandleUsage: OSStatus = -67668
/// A reference to the calling module was not found in the list of authorized callers.
public let errSecPVCReferentNotFound: OSStatus = -67669
/// A function address was not within the verified module.
public let errSecFunctionIntegrityFail: OSStatus = -67670
/// An internal error has occurred.
public let errSecInternalError: OSStatus = -67671
/// A memory error has occurred.
public let errSecMemoryError: OSStatus = -67672
/// Invalid data was encountered.
public let errSecInvalidData: OSStatus = -67673
/// A Module Directory Service error has occurred.
public let errSecMDSError: OSStatus = -67674
/// An invalid pointer was encountered.
public let errSecInvalidPointer: OSStatus = -67675
/// Self-check has failed.
public let errSecSelfCheckFailed: OSStatus = -67676
/// A function has failed.
public let errSecFunctionFailed: OSStatus = -67677
/// A module manifest verification failure has occurred.
public let errSecModuleManifestVerifyFailed: OSStatus = -67678
/// An invalid GUID was encountered.
public let errSecInvalidGUID: OSStatus = -67679
/// An invalid handle was encountered.
public let errSecInvalidHandle: OSStatus = -67680
/// An invalid DB list was encountered.
public let errSecInvalidDBList: OSStatus = -67681
/// An invalid passthrough ID was encountered.
public let errSecInvalidPassthroughID: OSStatus = -67682
/// An invalid network address was encountered.
public let errSecInvalidNetworkAddress: OSStatus = -67683
/// The certificate revocation list is already signed.
public let errSecCRLAlreadySigned: OSStatus = -67684
/// An invalid number of fields were encountered.
public let errSecInvalidNumberOfFields: OSStatus = -67685
/// A verification failure occurred.
public let errSecVerificationFailure: OSStatus = -67686
/// An unknown tag was encountered.
public let errSecUnknownTag: OSStatus = -67687
/// An invalid signature was encountered.
public let errSecInvalidSignature: OSStatus = -67688
/// An invalid name was encountered.
public let errSecInvalidName: OSStatus = -67689
/// An invalid certificate reference was encountered.
public let errSecInvalidCertificateRef: OSStatus = -67690
/// An invalid certificate group was encountered.
public let errSecInvalidCertificateGroup: OSStatus = -67691
/// The specified tag was not found.
public let errSecTagNotFound: OSStatus = -67692
/// The specified query was not valid.
public let errSecInvalidQuery: OSStatus = -67693
/// An invalid value was detected.
public let errSecInvalidValue: OSStatus = -67694
/// A callback has failed.
public let errSecCallbackFailed: OSStatus = -67695
/// An ACL delete operation has failed.
public let errSecACLDeleteFailed: OSStatus = -67696
/// An ACL replace operation has failed.
public let errSecACLReplaceFailed: OSStatus = -67697
/// An ACL add operation has failed.
public let errSecACLAddFailed: OSStatus = -67698
/// An ACL change operation has failed.
public let errSecACLChangeFailed: OSStatus = -67699
/// Invalid access credentials were encountered.
public let errSecInvalidAccessCredentials: OSStatus = -67700
/// An invalid record was encountered.
public let errSecInvalidRecord: OSStatus = -67701
/// An invalid ACL was encountered.
public let errSecInvalidACL: OSStatus = -67702
/// An invalid sample value was encountered.
public let errSecInvalidSampleValue: OSStatus = -67703
/// An incompatible version was encountered.
public let errSecIncompatibleVersion: OSStatus = -67704
/// The privilege was not granted.
public let errSecPrivilegeNotGranted: OSStatus = -67705
/// An invalid scope was encountered.
public let errSecInvalidScope: OSStatus = -67706
/// The PVC is already configured.
public let errSecPVCAlreadyConfigured: OSStatus = -67707
/// An invalid PVC was encountered.
public let errSecInvalidPVC: OSStatus = -67708
/// The EMM load has failed.
public let errSecEMMLoadFailed: OSStatus = -67709
/// The EMM unload has failed.
public let errSecEMMUnloadFailed: OSStatus = -67710
/// The add-in load operation has failed.
public let errSecAddinLoadFailed: OSStatus = -67711
/// An invalid key was encountered.
public let errSecInvalidKeyRef: OSStatus = -67712
/// An invalid key hierarchy was encountered.
public let errSecInvalidKeyHierarchy: OSStatus = -67713
/// The add-in unload operation has failed.
public let errSecAddinUnloadFailed: OSStatus = -67714
/// A library reference was not found.
public let errSecLibraryReferenceNotFound: OSStatus = -67715
/// An invalid add-in function table was encountered.
public let errSecInvalidAddinFunctionTable: OSStatus = -67716
/// An invalid service mask was encountered.
public let errSecInvalidServiceMask: OSStatus = -67717
/// A module was not loaded.
public let errSecModuleNotLoaded: OSStatus = -67718
/// An invalid subservice ID was encountered.
public let errSecInvalidSubServiceID: OSStatus = -67719
/// An attribute was not in the context.
public let errSecAttributeNotInContext: OSStatus = -67720
/// A module failed to initialize.
public let errSecModuleManagerInitializeFailed: OSStatus = -67721
/// A module was not found.
public let errSecModuleManagerNotFound: OSStatus = -67722
/// An event notification callback was not found.
public let errSecEventNotificationCallbackNotFound: OSStatus = -67723
/// An input length error was encountered.
public let errSecInputLengthError: OSStatus = -67724
/// An output length error was encountered.
public let errSecOutputLengthError: OSStatus = -67725
/// The privilege is not supported.
public let errSecPrivilegeNotSupported: OSStatus = -67726
/// A device error was encountered.
public let errSecDeviceError: OSStatus = -67727
/// The CSP handle was busy.
public let errSecAttachHandleBusy: OSStatus = -67728
/// You are not logged in.
public let errSecNotLoggedIn: OSStatus = -67729
/// An algorithm mismatch was encountered.
public let errSecAlgorithmMismatch: OSStatus = -67730
/// The key usage is incorrect.
public let errSecKeyUsageIncorrect: OSStatus = -67731
/// The key blob type is incorrect.
public let errSecKeyBlobTypeIncorrect: OSStatus = -67732
/// The key header is inconsistent.
public let errSecKeyHeaderInconsistent: OSStatus = -67733
/// The key header format is not supported.
public let errSecUnsupportedKeyFormat: OSStatus = -67734
/// The key size is not supported.
public let errSecUnsupportedKeySize: OSStatus = -67735
/// The key usage mask is not valid.
public let errSecInvalidKeyUsageMask: OSStatus = -67736
/// The key usage mask is not supported.
public let errSecUnsupportedKeyUsageMask: OSStatus = -67737
/// The key attribute mask is not valid.
public let errSecInvalidKeyAttributeMask: OSStatus = -67738
/// The key attribute mask is not supported.
public let errSecUnsupportedKeyAttributeMask: OSStatus = -67739
/// The key label is not valid.
public let errSecInvalidKeyLabel: OSStatus = -67740
/// The key label is not supported.
public let errSecUnsupportedKeyLabel: OSStatus = -67741
/// The key format is not valid.
public let errSecInvalidKeyFormat: OSStatus = -67742

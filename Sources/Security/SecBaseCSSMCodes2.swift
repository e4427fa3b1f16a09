// Apple's result codes (SecBase.h), with Apple's names and values: the codes taken over from CSSM,
// -67743 and below.
// The doc comment of each is the text `SecCopyErrorMessageString` returns for it
// (SecErrorMessages.swift).

/// The vector of buffers is not supported.
public let errSecUnsupportedVectorOfBuffers: OSStatus = -67743
/// The input vector is not valid.
public let errSecInvalidInputVector: OSStatus = -67744
/// The output vector is not valid.
public let errSecInvalidOutputVector: OSStatus = -67745
/// An invalid context was encountered.
public let errSecInvalidContext: OSStatus = -67746
/// An invalid algorithm was encountered.
public let errSecInvalidAlgorithm: OSStatus = -67747
/// A key attribute was not valid.
public let errSecInvalidAttributeKey: OSStatus = -67748
/// A key attribute was missing.
public let errSecMissingAttributeKey: OSStatus = -67749
/// An init vector attribute was not valid.
public let errSecInvalidAttributeInitVector: OSStatus = -67750
/// An init vector attribute was missing.
public let errSecMissingAttributeInitVector: OSStatus = -67751
/// A salt attribute was not valid.
public let errSecInvalidAttributeSalt: OSStatus = -67752
/// A salt attribute was missing.
public let errSecMissingAttributeSalt: OSStatus = -67753
/// A padding attribute was not valid.
public let errSecInvalidAttributePadding: OSStatus = -67754
/// A padding attribute was missing.
public let errSecMissingAttributePadding: OSStatus = -67755
/// A random number attribute was not valid.
public let errSecInvalidAttributeRandom: OSStatus = -67756
/// A random number attribute was missing.
public let errSecMissingAttributeRandom: OSStatus = -67757
/// A seed attribute was not valid.
public let errSecInvalidAttributeSeed: OSStatus = -67758
/// A seed attribute was missing.
public let errSecMissingAttributeSeed: OSStatus = -67759
/// A passphrase attribute was not valid.
public let errSecInvalidAttributePassphrase: OSStatus = -67760
/// A passphrase attribute was missing.
public let errSecMissingAttributePassphrase: OSStatus = -67761
/// A key length attribute was not valid.
public let errSecInvalidAttributeKeyLength: OSStatus = -67762
/// A key length attribute was missing.
public let errSecMissingAttributeKeyLength: OSStatus = -67763
/// A block size attribute was not valid.
public let errSecInvalidAttributeBlockSize: OSStatus = -67764
/// A block size attribute was missing.
public let errSecMissingAttributeBlockSize: OSStatus = -67765
/// An output size attribute was not valid.
public let errSecInvalidAttributeOutputSize: OSStatus = -67766
/// An output size attribute was missing.
public let errSecMissingAttributeOutputSize: OSStatus = -67767
/// The number of rounds attribute was not valid.
public let errSecInvalidAttributeRounds: OSStatus = -67768
/// The number of rounds attribute was missing.
public let errSecMissingAttributeRounds: OSStatus = -67769
/// An algorithm parameters attribute was not valid.
public let errSecInvalidAlgorithmParms: OSStatus = -67770
/// An algorithm parameters attribute was missing.
public let errSecMissingAlgorithmParms: OSStatus = -67771
/// A label attribute was not valid.
public let errSecInvalidAttributeLabel: OSStatus = -67772
/// A label attribute was missing.
public let errSecMissingAttributeLabel: OSStatus = -67773
/// A key type attribute was not valid.
public let errSecInvalidAttributeKeyType: OSStatus = -67774
/// A key type attribute was missing.
public let errSecMissingAttributeKeyType: OSStatus = -67775
/// A mode attribute was not valid.
public let errSecInvalidAttributeMode: OSStatus = -67776
/// A mode attribute was missing.
public let errSecMissingAttributeMode: OSStatus = -67777
/// An effective bits attribute was not valid.
public let errSecInvalidAttributeEffectiveBits: OSStatus = -67778
/// An effective bits attribute was missing.
public let errSecMissingAttributeEffectiveBits: OSStatus = -67779
/// A start date attribute was not valid.
public let errSecInvalidAttributeStartDate: OSStatus = -67780
/// A start date attribute was missing.
public let errSecMissingAttributeStartDate: OSStatus = -67781
/// An end date attribute was not valid.
public let errSecInvalidAttributeEndDate: OSStatus = -67782
/// An end date attribute was missing.
public let errSecMissingAttributeEndDate: OSStatus = -67783
/// A version attribute was not valid.
public let errSecInvalidAttributeVersion: OSStatus = -67784
/// A version attribute was missing.
public let errSecMissingAttributeVersion: OSStatus = -67785
/// A prime attribute was not valid.
public let errSecInvalidAttributePrime: OSStatus = -67786
/// A prime attribute was missing.
public let errSecMissingAttributePrime: OSStatus = -67787
/// A base attribute was not valid.
public let errSecInvalidAttributeBase: OSStatus = -67788
/// A base attribute was missing.
public let errSecMissingAttributeBase: OSStatus = -67789
/// A subprime attribute was not valid.
public let errSecInvalidAttributeSubprime: OSStatus = -67790
/// A subprime attribute was missing.
public let errSecMissingAttributeSubprime: OSStatus = -67791
/// An iteration count attribute was not valid.
public let errSecInvalidAttributeIterationCount: OSStatus = -67792
/// An iteration count attribute was missing.
public let errSecMissingAttributeIterationCount: OSStatus = -67793
/// A database handle attribute was not valid.
public let errSecInvalidAttributeDLDBHandle: OSStatus = -67794
/// A database handle attribute was missing.
public let errSecMissingAttributeDLDBHandle: OSStatus = -67795
/// An access credentials attribute was not valid.
public let errSecInvalidAttributeAccessCredentials: OSStatus = -67796
/// An access credentials attribute was missing.
public let errSecMissingAttributeAccessCredentials: OSStatus = -67797
/// A public key format attribute was not valid.
public let errSecInvalidAttributePublicKeyFormat: OSStatus = -67798
/// A public key format attribute was missing.
public let errSecMissingAttributePublicKeyFormat: OSStatus = -67799
/// A private key format attribute was not valid.
public let errSecInvalidAttributePrivateKeyFormat: OSStatus = -67800
/// A private key format attribute was missing.
public let errSecMissingAttributePrivateKeyFormat: OSStatus = -67801
/// A symmetric key format attribute was not valid.
public let errSecInvalidAttributeSymmetricKeyFormat: OSStatus = -67802
/// A symmetric key format attribute was missing.
public let errSecMissingAttributeSymmetricKeyFormat: OSStatus = -67803
/// A wrapped key format attribute was not valid.
public let errSecInvalidAttributeWrappedKeyFormat: OSStatus = -67804
/// A wrapped key format attribute was missing.
public let errSecMissingAttributeWrappedKeyFormat: OSStatus = -67805
/// A staged operation is in progress.
public let errSecStagedOperationInProgress: OSStatus = -67806
/// A staged operation was not started.
public let errSecStagedOperationNotStarted: OSStatus = -67807
/// A cryptographic verification failure has occurred.
public let errSecVerifyFailed: OSStatus = -67808
/// The query size is unknown.
public let errSecQuerySizeUnknown: OSStatus = -67809
/// A block size mismatch occurred.
public let errSecBlockSizeMismatch: OSStatus = -67810
/// The public key was inconsistent.
public let errSecPublicKeyInconsistent: OSStatus = -67811
/// A device verification failure has occurred.
public let errSecDeviceVerifyFailed: OSStatus = -67812
/// An invalid login name was detected.
public let errSecInvalidLoginName: OSStatus = -67813
/// The user is already logged in.
public let errSecAlreadyLoggedIn: OSStatus = -67814
/// An invalid digest algorithm was detected.
public let errSecInvalidDigestAlgorithm: OSStatus = -67815
/// An invalid CRL group was detected.
public let errSecInvalidCRLGroup: OSStatus = -67816
/// The certificate cannot operate.
public let errSecCertificateCannotOperate: OSStatus = -67817
/// An expired certificate was detected.
public let errSecCertificateExpired: OSStatus = -67818
/// The certificate is not yet valid.
public let errSecCertificateNotValidYet: OSStatus = -67819
/// The certificate was revoked.
public let errSecCertificateRevoked: OSStatus = -67820
/// The certificate was suspended.
public let errSecCertificateSuspended: OSStatus = -67821
/// Insufficient credentials were detected.
public let errSecInsufficientCredentials: OSStatus = -67822
/// The action was not valid.
public let errSecInvalidAction: OSStatus = -67823
/// The authority was not valid.
public let errSecInvalidAuthority: OSStatus = -67824
/// A verify action has failed.
public let errSecVerifyActionFailed: OSStatus = -67825
/// The certificate authority was not valid.
public let errSecInvalidCertAuthority: OSStatus = -67826
/// The CRL authority was not valid.
public let errSecInvaldCRLAuthority: OSStatus = -67827
/// The CRL encoding was not valid.
public let errSecInvalidCRLEncoding: OSStatus = -67828
/// The CRL type was not valid.
public let errSecInvalidCRLType: OSStatus = -67829
/// The CRL was not valid.
public let errSecInvalidCRL: OSStatus = -67830
/// The form type was not valid.
public let errSecInvalidFormType: OSStatus = -67831
/// The ID was not valid.
public let errSecInvalidID: OSStatus = -67832
/// The identifier was not valid.
public let errSecInvalidIdentifier: OSStatus = -67833
/// The index was not valid.
public let errSecInvalidIndex: OSStatus = -67834
/// The policy identifiers are not valid.
public let errSecInvalidPolicyIdentifiers: OSStatus = -67835
/// The time specified was not valid.
public let errSecInvalidTimeString: OSStatus = -67836
/// The trust policy reason was not valid.
public let errSecInvalidReason: OSStatus = -67837
/// The request inputs are not valid.
public let errSecInvalidRequestInputs: OSStatus = -67838
/// The response vector was not valid.
public let errSecInvalidResponseVector: OSStatus = -67839
/// The stop-on policy was not valid.
public let errSecInvalidStopOnPolicy: OSStatus = -67840
/// The tuple was not valid.
public let errSecInvalidTuple: OSStatus = -67841
/// Multiple values are not supported.
public let errSecMultipleValuesUnsupported: OSStatus = -67842
/// The certificate was not trusted.
public let errSecNotTrusted: OSStatus = -67843
/// No default authority was detected.
public let errSecNoDefaultAuthority: OSStatus = -67844
/// The trust policy had a rejected form.
public let errSecRejectedForm: OSStatus = -67845
/// The request was lost.
public let errSecRequestLost: OSStatus = -67846
/// The request was rejected.
public let errSecRequestRejected: OSStatus = -67847
/// The address type is not supported.
public let errSecUnsupportedAddressType: OSStatus = -67848
/// The service is not supported.
public let errSecUnsupportedService: OSStatus = -67849
/// The tuple group was not valid.
public let errSecInvalidTupleGroup: OSStatus = -67850
/// The base ACLs are not valid.
public let errSecInvalidBaseACLs: OSStatus = -67851
/// The tuple credentials are not valid.
public let errSecInvalidTupleCredendtials: OSStatus = -67852
/// The encoding was not valid.
public let errSecInvalidEncoding: OSStatus = -67853
/// The validity period was not valid.
public let errSecInvalidValidityPeriod: OSStatus = -67854
/// The requestor was not valid.
public let errSecInvalidRequestor: OSStatus = -67855
/// The request descriptor was not valid.
public let errSecRequestDescriptor: OSStatus = -67856
/// The bundle information was not valid.
public let errSecInvalidBundleInfo: OSStatus = -67857
/// The CRL index was not valid.
public let errSecInvalidCRLIndex: OSStatus = -67858
/// No field values were detected.
public let errSecNoFieldValues: OSStatus = -67859
/// The field format is not supported.
public let errSecUnsupportedFieldFormat: OSStatus = -67860
/// The index information is not supported.
public let errSecUnsupportedIndexInfo: OSStatus = -67861
/// The locality is not supported.
public let errSecUnsupportedLocality: OSStatus = -67862
/// The number of attributes is not supported.
public let errSecUnsupportedNumAttributes: OSStatus = -67863
/// The number of indexes is not supported.
public let errSecUnsupportedNumIndexes: OSStatus = -67864
/// The number of record types is not supported.
public let errSecUnsupportedNumRecordTypes: OSStatus = -67865
/// Too many fields were specified.
public let errSecFieldSpecifiedMultiple: OSStatus = -67866
/// The field format was incompatible.
public let errSecIncompatibleFieldFormat: OSStatus = -67867
/// The parsing module was not valid.
public let errSecInvalidParsingModule: OSStatus = -67868
/// The database is locked.
public let errSecDatabaseLocked: OSStatus = -67869
/// The data store is open.
public let errSecDatastoreIsOpen: OSStatus = -67870
/// A missing value was detected.
public let errSecMissingValue: OSStatus = -67871
/// The query limits are not supported.
public let errSecUnsupportedQueryLimits: OSStatus = -67872
/// The number of selection predicates is not supported.
public let errSecUnsupportedNumSelectionPreds: OSStatus = -67873
/// The operator is not supported.
public let errSecUnsupportedOperator: OSStatus = -67874
/// The database location is not valid.
public let errSecInvalidDBLocation: OSStatus = -67875
/// The access request is not valid.
public let errSecInvalidAccessRequest: OSStatus = -67876
/// The index information is not valid.
public let errSecInvalidIndexInfo: OSStatus = -67877
/// The new owner is not valid.
public let errSecInvalidNewOwner: OSStatus = -67878
/// The modify mode is not valid.
public let errSecInvalidModifyMode: OSStatus = -67879
/// A required certificate extension is missing.
public let errSecMissingRequiredExtension: OSStatus = -67880
/// The extended key usage extension was not marked critical.
public let errSecExtendedKeyUsageNotCritical: OSStatus = -67881
/// A timestamp was expected but was not found.
public let errSecTimestampMissing: OSStatus = -67882
/// The timestamp was not valid.
public let errSecTimestampInvalid: OSStatus = -67883
/// The timestamp was not trusted.
public let errSecTimestampNotTrusted: OSStatus = -67884
/// The timestamp service is not available.
public let errSecTimestampServiceNotAvailable: OSStatus = -67885
/// An unrecognized or unsupported Algorithm Identifier in timestamp.
public let errSecTimestampBadAlg: OSStatus = -67886
/// The timestamp transaction is not permitted or supported.
public let errSecTimestampBadRequest: OSStatus = -67887
/// The timestamp data submitted has the wrong format.
public let errSecTimestampBadDataFormat: OSStatus = -67888
/// The time source for the Timestamp Authority is not available.
public let errSecTimestampTimeNotAvailable: OSStatus = -67889
/// The requested policy is not supported by the Timestamp Authority.
public let errSecTimestampUnacceptedPolicy: OSStatus = -67890
/// The requested extension is not supported by the Timestamp Authority.
public let errSecTimestampUnacceptedExtension: OSStatus = -67891
/// The additional information requested is not available.
public let errSecTimestampAddInfoNotAvailable: OSStatus = -67892
/// The timestamp request cannot be handled due to system failure.
public let errSecTimestampSystemFailure: OSStatus = -67893
/// A signing time was expected but was not found.
public let errSecSigningTimeMissing: OSStatus = -67894
/// A timestamp transaction was rejected.
public let errSecTimestampRejection: OSStatus = -67895
/// A timestamp transaction is waiting.
public let errSecTimestampWaiting: OSStatus = -67896
/// A timestamp authority revocation warning was issued.
public let errSecTimestampRevocationWarning: OSStatus = -67897
/// A timestamp authority revocation notification was issued.
public let errSecTimestampRevocationNotification: OSStatus = -67898
/// The requested policy is not allowed for this certificate.
public let errSecCertificatePolicyNotAllowed: OSStatus = -67899
/// The requested name is not allowed for this certificate.
public let errSecCertificateNameNotAllowed: OSStatus = -67900
/// The validity period in the certificate exceeds the maximum allowed.
public let errSecCertificateValidityPeriodTooLong: OSStatus = -67901
/// The verified certificate is a CA rather than an end-entity
public let errSecCertificateIsCA: OSStatus = -67902

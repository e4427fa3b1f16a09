// Apple's documented ways to use elliptic-curve keys for encryption and key agreement
// ("Using Keys for Encryption" with an ECIES algorithm, and SecKeyCopyKeyExchangeResult with
// its parameters), written as on macOS and iOS with only Foundation and Security imported.
// KeyAgreementSnippetsTests runs it.

import Foundation
import Security

/// "Using Keys for Encryption", for an EC key: ECIES, as the Secure Enclave's keys use it.
func encryptForKey(_ plainText: Data, publicKey: SecKey) throws -> Data {
    let algorithm: SecKeyAlgorithm = .eciesEncryptionCofactorVariableIVX963SHA256AESGCM
    guard SecKeyIsAlgorithmSupported(publicKey, .encrypt, algorithm) else {
        throw KeychainError.unhandledError(status: errSecParam)
    }
    var error: Unmanaged<CFError>?
    guard
        let cipherText = SecKeyCreateEncryptedData(publicKey, algorithm, plainText as CFData, &error) as Data?
    else {
        throw error!.takeRetainedValue() as Error
    }
    return cipherText
}

/// "Using Keys for Encryption": the private key decrypts.
func decryptWithKey(_ cipherText: Data, privateKey: SecKey) throws -> Data {
    let algorithm: SecKeyAlgorithm = .eciesEncryptionCofactorVariableIVX963SHA256AESGCM
    guard SecKeyIsAlgorithmSupported(privateKey, .decrypt, algorithm) else {
        throw KeychainError.unhandledError(status: errSecParam)
    }
    var error: Unmanaged<CFError>?
    guard
        let clearText = SecKeyCreateDecryptedData(privateKey, algorithm, cipherText as CFData, &error)
            as Data?
    else {
        throw error!.takeRetainedValue() as Error
    }
    return clearText
}

/// SecKeyCopyKeyExchangeResult: a 32-byte key agreed with a peer through the X9.63 KDF.
func agreeOnKey(privateKey: SecKey, peerPublicKey: SecKey, sharedInfo: Data) throws -> Data {
    let parameters: [String: Any] = [
        SecKeyKeyExchangeParameter.requestedSize.rawValue as String: 32,
        SecKeyKeyExchangeParameter.sharedInfo.rawValue as String: sharedInfo,
    ]
    var error: Unmanaged<CFError>?
    guard
        let shared = SecKeyCopyKeyExchangeResult(
            privateKey, .ecdhKeyExchangeStandardX963SHA256, peerPublicKey, parameters as CFDictionary, &error)
    else {
        throw error!.takeRetainedValue() as Error
    }
    return shared as Data
}

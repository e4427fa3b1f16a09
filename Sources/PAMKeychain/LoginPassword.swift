internal import CPAM
internal import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

// The PAM face (docs/pam.md): the two calls pam/pam_p11keychain.c makes, in a child process
// that already is the target user. Every rule is KeychainCore's (LoginKeychain.swift); this
// file converts C arguments, opens the user's default keychain and turns an error into one
// line for the system log.

@c @implementation
func p11k_pam_unlock(
    _ home: UnsafePointer<CChar>?, _ password: UnsafePointer<UInt8>?, _ length: Int,
    _ message: UnsafeMutablePointer<CChar>?, _ capacity: Int
) -> Int32 {
    bridge(message, capacity) { () throws(CoreError) -> (Int32, String) in
        var secret = try bytes(password, length)
        defer { wipe(&secret) }
        let token = try loginKeychain(home)
        switch try token.unlockWithLoginPassword(secret) {
        case .created:
            return (Int32(P11K_PAM_CREATED), "created the login keychain \(token.configuration.path)")
        case .unlocked:
            return (Int32(P11K_PAM_DONE), "")
        }
    }
}

@c @implementation
func p11k_pam_change(
    _ home: UnsafePointer<CChar>?, _ oldPassword: UnsafePointer<UInt8>?, _ oldLength: Int,
    _ newPassword: UnsafePointer<UInt8>?, _ newLength: Int,
    _ message: UnsafeMutablePointer<CChar>?, _ capacity: Int
) -> Int32 {
    bridge(message, capacity) { () throws(CoreError) -> (Int32, String) in
        var old = try bytes(oldPassword, oldLength)
        var new = try bytes(newPassword, newLength)
        defer {
            wipe(&old)
            wipe(&new)
        }
        let token = try loginKeychain(home)
        guard try token.followLoginPasswordChange(from: old, to: new) else {
            return (Int32(P11K_PAM_NOTHING), "")
        }
        return (Int32(P11K_PAM_DONE), "changed the PIN of the login keychain \(token.configuration.path)")
    }
}

/// Runs `body`, writes its line (or the error's) into `message`, and returns its result, or
/// P11K_PAM_FAILED when it throws.
private func bridge(
    _ message: UnsafeMutablePointer<CChar>?, _ capacity: Int, _ body: () throws(CoreError) -> (Int32, String)
) -> Int32 {
    let result: Int32
    let line: String
    do {
        (result, line) = try body()
    } catch {
        (result, line) = (Int32(P11K_PAM_FAILED), error.message)
    }
    if let message, capacity > 0 {
        let utf8 = Array(line.utf8.prefix(capacity - 1))
        for (index, byte) in utf8.enumerated() { message[index] = CChar(bitPattern: byte) }
        message[utf8.count] = 0
    }
    return result
}

/// The default keychain of the user whose home is `home`, as `p11keychain unlock` opens it
/// there: the configuration of that home (or the system's), its first token.
private func loginKeychain(_ home: UnsafePointer<CChar>?) throws(CoreError) -> Token {
    guard let home else { throw CoreError(.invalidArgument, "the user has no home directory") }
    let configuration: Configuration
    do {
        configuration = try Configuration.load(environment: ["HOME": String(cString: home)])
    } catch {
        throw CoreError(.tokenNotPresent, "cannot read the configuration: \(error)")
    }
    guard let first = configuration.tokens.first else {
        throw CoreError(.tokenNotPresent, "the configuration names no token")
    }
    return Token(configuration: first)
}

private func bytes(_ pointer: UnsafePointer<UInt8>?, _ count: Int) throws(CoreError) -> [UInt8] {
    guard let pointer, count >= 0 else { throw CoreError(.invalidArgument, "no password") }
    return Array(UnsafeBufferPointer(start: pointer, count: count))
}

private func wipe(_ bytes: inout [UInt8]) {
    for index in bytes.indices { bytes[index] = 0 }
}

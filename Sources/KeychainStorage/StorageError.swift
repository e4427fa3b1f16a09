internal import CSQLite

/// An error from the store. Messages name the file and the SQLite reason; they never
/// contain a bound value (labels, DER, secrets).
public struct StorageError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, in the terms the layers above map to their own codes.
    public enum Code: Sendable, Equatable {
        /// The file or its directory cannot be opened or created.
        case cannotOpen
        /// The store is read-only for this process (permissions, read-only mount).
        case readOnly
        /// The disk or the quota is full.
        case full
        /// Another process held the store longer than the busy timeout.
        case busy
        /// The file is not a database, or fails its integrity checks.
        case corrupt
        /// The file was written by a newer p11keychain.
        case newerSchema
        /// A uniqueness rule refused the row.
        case constraint
        /// Any other SQLite failure (I/O error, out of memory, misuse).
        case failed
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// The one table from SQLite result codes to storage error codes.
    static func code(forSQLite result: Int32) -> Code {
        switch result & 0xff {
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH: .cannotOpen
        case SQLITE_READONLY: .readOnly
        case SQLITE_FULL: .full
        case SQLITE_BUSY, SQLITE_LOCKED: .busy
        case SQLITE_CORRUPT, SQLITE_NOTADB: .corrupt
        case SQLITE_CONSTRAINT: .constraint
        default: .failed
        }
    }
}

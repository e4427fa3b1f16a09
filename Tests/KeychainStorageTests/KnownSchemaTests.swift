import Testing

@testable import KeychainStorage

/// `SQLiteStore.knownSchema` lets a store that holds only what the migrations make open
/// without building the expected schema: it must be exactly what they make.
@Suite("The schema a store is checked against at once")
struct KnownSchemaTests {
    @Test("the known schema is what the migrations make in an in-memory store, object for object")
    func knownSchemaIsWhatTheMigrationsMake() throws {
        #expect(Set(SQLiteStore.knownSchema) == (try SQLiteStore.expectedSchema()))
    }
}

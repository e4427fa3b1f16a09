import Foundation
import KeychainStorage
import Testing

/// The freshness bound of a PostgreSQL store (ARCHITECTURE.md §4.5): a host relies on the
/// change count it confirmed for at most `freshness-ms`, and a write another host announces
/// (LISTEN/NOTIFY) ends that at once.
@Suite("The PostgreSQL engine's freshness bound")
struct PostgresFreshnessTests {
    /// Another host's connection to `place`'s store, with `freshness` milliseconds.
    private func host(_ place: TestPlace, freshness: Int) throws -> ObjectStore {
        try ObjectStore.open(
            place.location, token: place.token, create: false,
            server: ServerOptions(freshnessMilliseconds: freshness))
    }

    private func now() -> Double { ProcessInfo.processInfo.systemUptime }

    @Test(
        "a count confirmed within the bound is relied on while no write is announced, and asked again after it"
    )
    func countIsReliedOnForTheBoundOnly() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            let bound = 3.0
            let other = try host(place, freshness: Int(bound * 1000))
            let start = now()
            let before = try #require(other.changeCount)
            // A change made by hand announces nothing: only the bound ends what is kept.
            try place.query("UPDATE store_state SET change_count = change_count + 1")
            if now() - start < bound * 0.9 {
                #expect(other.changeCount == before, "relied on within the bound")
            }
            Thread.sleep(forTimeInterval: max(0, bound - (now() - start)) + 0.05)
            #expect(try #require(other.changeCount) != before, "asked again once the bound has passed")
        }
    }

    @Test("freshness 0 asks the server on every call")
    func zeroAsksEveryTime() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            let other = try host(place, freshness: 0)
            let before = try #require(other.changeCount)
            try place.query("UPDATE store_state SET change_count = change_count + 1")
            #expect(try #require(other.changeCount) != before)
        }
    }

    @Test("a write by another host is announced and ends what is kept at once, long before the bound")
    func announcedWriteEndsTheBound() throws {
        try withTemporaryStore(on: .postgresql) { store, place in
            let other = try host(place, freshness: 60_000)
            // What its own write confirmed is relied on too, and must end the same way.
            _ = try other.insert(uniqueKey: nil, attributes: [])
            let before = try #require(other.changeCount)
            #expect(other.changeCount == before)
            let start = now()
            _ = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("announced"))])
            var seen = other.changeCount
            while seen == before, now() - start < 5 {
                usleep(2_000)
                seen = other.changeCount
            }
            #expect(seen != nil && seen != before, "the other host saw the write")
            #expect(now() - start < 5, "within \(now() - start) s, not the 60 s bound")
            // Its own writes move what a host keeps too.
            let mine = try #require(other.changeCount)
            _ = try other.insert(uniqueKey: nil, attributes: [])
            #expect(try #require(other.changeCount) != mine)
        }
    }

    @Test(
        "a connection made again confirms the count anew: notifications sent while it was down are not lost")
    func reconnectionConfirmsAgain() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            let other = try ObjectStore.open(
                place.location + " application_name=\(place.token)", token: place.token, create: false,
                server: ServerOptions(freshnessMilliseconds: 60_000))
            let before = try #require(other.changeCount)
            try place.query(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE application_name = '\(place.token)'"
            )
            try place.query("UPDATE store_state SET change_count = change_count + 1")
            // The dropped connection is found at the next call: nothing is relied on.
            var seen = other.changeCount
            if seen == nil { seen = other.changeCount }
            #expect(seen != nil && seen != before)
        }
    }
}

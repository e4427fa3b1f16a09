// secitem-bench: the Swift API's speed on generic passwords, run by
// bench/session.sh.
//
//     secitem-bench --pin PIN --sizes 1000,10000,100000 [--lookups N] [--stored N]
//
// In the default keychain ($P11KEYCHAIN_DIR), which has the user PIN PIN: unlocks with
// SecKeychainUnlock, unless the login session has it unlocked already (p11keychain unlock),
// then grows the keychain to each size with SecItemAdd (one generic password per call:
// service, account, data) and, at each size, times N SecItemCopyMatching calls by service +
// account returning the data (random existing items, every result checked). Prints a line
// per size (`--stored N`: the keychain holds this program's first N items already, from an
// earlier run, so that a profiler can watch the lookups alone):
//
//     secitem items=1000 added=1000 add_per_s=2345.6 lookups=2000 copy_p50_us=31.2 copy_p90_us=40.1 copy_max_us=120.0 copy_cpu_p50_us=30.5
//
// (`copy_cpu_p50_us`: the median of the calling thread's CPU time per call, which time other
// programs take on a shared machine does not inflate.) The same lookups are timed again with an
// LAContext holding the PIN as kSecUseAuthenticationContext, as Apple code passes one:
// `ctx_p50_us`, `ctx_cpu_p50_us` (the target: at most 5 µs more than without).
//
// Exit status 0, or 1 with the failing call's OSStatus.

import Foundation
import LocalAuthentication
import Security

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("secitem-bench: \(message)\n".utf8))
    exit(1)
}

func now(_ clock: clockid_t = CLOCK_MONOTONIC) -> Double {
    var spec = timespec()
    clock_gettime(clock, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

var pin: String?
var sizes: [Int] = [1000, 10_000, 100_000]
var lookups = 2000
var stored = 0
var arguments = CommandLine.arguments.dropFirst()
while let option = arguments.popFirst() {
    guard let value = arguments.popFirst() else { fail("\(option) needs a value") }
    switch option {
    case "--pin": pin = value
    case "--sizes": sizes = value.split(separator: ",").compactMap { Int($0) }
    case "--lookups": lookups = Int(value) ?? lookups
    case "--stored": stored = Int(value) ?? stored
    default: fail("unknown option \(option)")
    }
}

var status: SecKeychainStatus = 0
guard SecKeychainGetStatus(nil, &status) == errSecSuccess else { fail("cannot open the default keychain") }
if status & kSecUnlockStateStatus == 0 {
    guard let pin else { fail("the keychain is locked and no --pin was given") }
    let unlocked = SecKeychainUnlock(nil, UInt32(pin.utf8.count), pin, true)
    guard unlocked == errSecSuccess else { fail("SecKeychainUnlock: \(unlocked)") }
}

let service = "secitem-bench"
/// An LAContext holding the PIN (Apple's .applicationPassword credential); nil without --pin.
let context: LAContext? = pin.map { pin in
    let context = LAContext()
    _ = context.setCredential(Data(pin.utf8), type: .applicationPassword)
    return context
}
func account(_ index: Int) -> String { "account-\(index)" }
func secret(_ index: Int) -> Data { Data("password \(index) of the benchmark".utf8) }

for size in sizes where size >= stored {
    let start = now()
    let first = stored
    while stored < size {
        let item: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account(stored),
            kSecValueData as String: secret(stored),
        ]
        let added = SecItemAdd(item as CFDictionary, nil)
        guard added == errSecSuccess else { fail("SecItemAdd of item \(stored): \(added)") }
        stored += 1
    }
    let addSeconds = now() - start

    // The calling thread's CPU time per call too: on a shared machine the wall-clock figures
    // include the time other programs had the CPU. Without and with an LAContext, alternately,
    // so that both see the same machine.
    var samples: [Double] = []
    var cpuSamples: [Double] = []
    var contextSamples: [Double] = []
    var contextCPUSamples: [Double] = []
    var generator = SystemRandomNumberGenerator()
    for lookup in 0..<(2 * lookups) {
        let index = Int.random(in: 0..<stored, using: &generator)
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account(index),
            kSecReturnData as String: true,
        ]
        if lookup % 2 == 1, let context { query[kSecUseAuthenticationContext as String] = context }
        var result: CFTypeRef?
        let begin = now()
        let beginCPU = now(CLOCK_THREAD_CPUTIME_ID)
        let found = SecItemCopyMatching(query as CFDictionary, &result)
        let elapsedCPU = now(CLOCK_THREAD_CPUTIME_ID) - beginCPU
        let elapsed = now() - begin
        guard found == errSecSuccess, (result as? Data) == secret(index) else {
            fail("SecItemCopyMatching of item \(index): \(found)")
        }
        if lookup % 2 == 0 {
            samples.append(elapsed * 1e6)
            cpuSamples.append(elapsedCPU * 1e6)
        } else {
            contextSamples.append(elapsed * 1e6)
            contextCPUSamples.append(elapsedCPU * 1e6)
        }
    }
    samples.sort()
    cpuSamples.sort()
    contextSamples.sort()
    contextCPUSamples.sort()
    func percentile(_ p: Double, of samples: [Double]) -> Double {
        samples.isEmpty ? 0 : samples[min(samples.count - 1, Int(Double(samples.count) * p))]
    }
    func percentile(_ p: Double) -> Double { percentile(p, of: samples) }
    let added = stored - first
    print(
        "secitem items=\(stored) added=\(added) add_per_s=\(String(format: "%.1f", added == 0 ? 0 : Double(added) / addSeconds)) "
            + "lookups=\(samples.count) copy_p50_us=\(String(format: "%.1f", percentile(0.5))) "
            + "copy_p90_us=\(String(format: "%.1f", percentile(0.9))) "
            + "copy_max_us=\(String(format: "%.1f", samples.last ?? 0)) "
            + "copy_cpu_p50_us=\(String(format: "%.1f", percentile(0.5, of: cpuSamples))) "
            + "ctx_p50_us=\(String(format: "%.1f", percentile(0.5, of: contextSamples))) "
            + "ctx_cpu_p50_us=\(String(format: "%.1f", percentile(0.5, of: contextCPUSamples)))")
    fflush(nil)
}

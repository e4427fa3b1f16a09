import CPKCS11
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Why the built module could not be loaded; shown as the failure of every test.
struct ModuleLoadError: Error, CustomStringConvertible {
    var description: String
}

/// A function the module's table left NULL.
struct MissingFunction: Error, CustomStringConvertible {
    var description: String
}

/// A function table of the module (CK_FUNCTION_LIST or CK_FUNCTION_LIST_3_0), reached the way
/// a host reaches it: `try functions.C_GetInfo(&info)` reads the pointer from the module's table
/// and calls it. A NULL entry throws instead of crashing the test process.
@dynamicMemberLookup
struct FunctionTable<List>: @unchecked Sendable {
    // @unchecked: the tables are `static const` in p11/functions.c; nobody writes them.
    let pointer: UnsafePointer<List>

    subscript<Function>(dynamicMember keyPath: KeyPath<List, Function?>) -> Function {
        get throws {
            guard let function = pointer.pointee[keyPath: keyPath] else {
                throw MissingFunction(description: "the function list has a NULL entry at \(keyPath)")
            }
            return function
        }
    }
}

/// The built `libp11keychain-pkcs11.so`, opened with dlopen and driven only through the
/// entry points it exports: the honest test of what users load (ARCHITECTURE.md §10).
final class LoadedModule: @unchecked Sendable {
    // @unchecked: every property is set once in init and never changes.
    let path: String
    let handle: UnsafeMutableRawPointer
    let getFunctionList: CK_C_GetFunctionList
    let getInterfaceList: CK_C_GetInterfaceList
    let getInterface: CK_C_GetInterface
    /// The v2.40 list from C_GetFunctionList.
    let functions: FunctionTable<CK_FUNCTION_LIST>

    /// The module next to the running test bundle (`swift build --build-tests` puts the
    /// product there), or `$P11KEYCHAIN_TEST_MODULE`.
    static var defaultPath: String {
        if let explicit = ProcessInfo.processInfo.environment["P11KEYCHAIN_TEST_MODULE"], !explicit.isEmpty {
            return explicit
        }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("libp11keychain-pkcs11.so").path
    }

    /// The module every test uses, loaded once: a host loads a module once per process.
    static let shared: Result<LoadedModule, ModuleLoadError> = Result {
        () throws(ModuleLoadError) in try LoadedModule(path: defaultPath)
    }

    /// The shared module, or the reason it could not be loaded.
    static func load() throws -> LoadedModule { try shared.get() }

    init(path: String) throws(ModuleLoadError) {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ModuleLoadError(
                description: "\(path) does not exist: build it with `swift build --build-tests`")
        }
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
            throw ModuleLoadError(description: "dlopen(\(path)) failed: \(String(cString: dlerror()))")
        }
        func symbol<F>(_ name: String, as type: F.Type) throws(ModuleLoadError) -> F {
            guard let address = dlsym(handle, name) else {
                throw ModuleLoadError(description: "\(path) does not export \(name)")
            }
            return unsafeBitCast(address, to: type)
        }
        self.path = path
        self.handle = handle
        getFunctionList = try symbol("C_GetFunctionList", as: CK_C_GetFunctionList.self)
        getInterfaceList = try symbol("C_GetInterfaceList", as: CK_C_GetInterfaceList.self)
        getInterface = try symbol("C_GetInterface", as: CK_C_GetInterface.self)
        var list: UnsafeMutablePointer<CK_FUNCTION_LIST>? = nil
        let rv = getFunctionList(&list)
        guard rv == CKR_OK, let list else {
            throw ModuleLoadError(description: "C_GetFunctionList returned \(name(of: rv))")
        }
        functions = FunctionTable(pointer: UnsafePointer(list))
    }

    /// The interface `C_GetInterface` gives for a name (NULL when nil) and version.
    func interface(named name: String?, version: CK_VERSION?) -> (CK_RV, CK_INTERFACE?) {
        var found: UnsafeMutablePointer<CK_INTERFACE>? = nil
        var requested = version ?? CK_VERSION()
        let rv: CK_RV
        if let name {
            var bytes = Array(name.utf8CString).map { CK_UTF8CHAR(bitPattern: $0) }
            rv = bytes.withUnsafeMutableBufferPointer { nameBuffer in
                if version != nil {
                    return getInterface(nameBuffer.baseAddress, &requested, &found, 0)
                }
                return getInterface(nameBuffer.baseAddress, nil, &found, 0)
            }
        } else if version != nil {
            rv = getInterface(nil, &requested, &found, 0)
        } else {
            rv = getInterface(nil, nil, &found, 0)
        }
        return (rv, found?.pointee)
    }

    /// The v3.0 list, through `C_GetInterface("PKCS 11", 3.0)`.
    func functions30() throws -> FunctionTable<CK_FUNCTION_LIST_3_0> {
        let (rv, interface) = self.interface(named: "PKCS 11", version: CK_VERSION(major: 3, minor: 0))
        guard rv == CKR_OK, let list = interface?.pFunctionList else {
            throw ModuleLoadError(description: "C_GetInterface(\"PKCS 11\", 3.0) returned \(name(of: rv))")
        }
        return FunctionTable(pointer: UnsafePointer(list.assumingMemoryBound(to: CK_FUNCTION_LIST_3_0.self)))
    }
}

/// The file mapped at `address` in this process, from /proc/self/maps (dladdr needs
/// _GNU_SOURCE, which the Glibc module does not define).
func mappedFile(containing address: UnsafeRawPointer) -> String? {
    let target = UInt(bitPattern: address)
    let maps = String(decoding: readFile("/proc/self/maps"), as: UTF8.self)
    for line in maps.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        let range = fields.first?.split(separator: "-") ?? []
        guard fields.count >= 6, range.count == 2, let low = UInt(range[0], radix: 16),
            let high = UInt(range[1], radix: 16)
        else { continue }
        if (low..<high).contains(target) { return fields[5...].joined(separator: " ") }
    }
    return nil
}

/// A CK_RV's name, for readable failure messages.
func name(of rv: CK_RV) -> String {
    let names: [CK_RV: String] = [
        CK_RV(CKR_OK): "CKR_OK",
        CK_RV(CKR_ARGUMENTS_BAD): "CKR_ARGUMENTS_BAD",
        CK_RV(CKR_ATTRIBUTE_READ_ONLY): "CKR_ATTRIBUTE_READ_ONLY",
        CK_RV(CKR_ATTRIBUTE_TYPE_INVALID): "CKR_ATTRIBUTE_TYPE_INVALID",
        CK_RV(CKR_ATTRIBUTE_VALUE_INVALID): "CKR_ATTRIBUTE_VALUE_INVALID",
        CK_RV(CKR_ACTION_PROHIBITED): "CKR_ACTION_PROHIBITED",
        CK_RV(CKR_BUFFER_TOO_SMALL): "CKR_BUFFER_TOO_SMALL",
        CK_RV(CKR_CRYPTOKI_NOT_INITIALIZED): "CKR_CRYPTOKI_NOT_INITIALIZED",
        CK_RV(CKR_CRYPTOKI_ALREADY_INITIALIZED): "CKR_CRYPTOKI_ALREADY_INITIALIZED",
        CK_RV(CKR_DEVICE_ERROR): "CKR_DEVICE_ERROR",
        CK_RV(CKR_FUNCTION_FAILED): "CKR_FUNCTION_FAILED",
        CK_RV(CKR_FUNCTION_NOT_SUPPORTED): "CKR_FUNCTION_NOT_SUPPORTED",
        CK_RV(CKR_FUNCTION_NOT_PARALLEL): "CKR_FUNCTION_NOT_PARALLEL",
        CK_RV(CKR_GENERAL_ERROR): "CKR_GENERAL_ERROR",
        CK_RV(CKR_MECHANISM_INVALID): "CKR_MECHANISM_INVALID",
        CK_RV(CKR_MECHANISM_PARAM_INVALID): "CKR_MECHANISM_PARAM_INVALID",
        CK_RV(CKR_OBJECT_HANDLE_INVALID): "CKR_OBJECT_HANDLE_INVALID",
        CK_RV(CKR_OPERATION_ACTIVE): "CKR_OPERATION_ACTIVE",
        CK_RV(CKR_OPERATION_NOT_INITIALIZED): "CKR_OPERATION_NOT_INITIALIZED",
        CK_RV(CKR_SESSION_HANDLE_INVALID): "CKR_SESSION_HANDLE_INVALID",
        CK_RV(CKR_SESSION_PARALLEL_NOT_SUPPORTED): "CKR_SESSION_PARALLEL_NOT_SUPPORTED",
        CK_RV(CKR_SESSION_READ_ONLY): "CKR_SESSION_READ_ONLY",
        CK_RV(CKR_SLOT_ID_INVALID): "CKR_SLOT_ID_INVALID",
        CK_RV(CKR_TEMPLATE_INCOMPLETE): "CKR_TEMPLATE_INCOMPLETE",
        CK_RV(CKR_TEMPLATE_INCONSISTENT): "CKR_TEMPLATE_INCONSISTENT",
        CK_RV(CKR_TOKEN_NOT_PRESENT): "CKR_TOKEN_NOT_PRESENT",
        CK_RV(CKR_TOKEN_WRITE_PROTECTED): "CKR_TOKEN_WRITE_PROTECTED",
        CK_RV(CKR_USER_NOT_LOGGED_IN): "CKR_USER_NOT_LOGGED_IN",
        CK_RV(CKR_USER_PIN_NOT_INITIALIZED): "CKR_USER_PIN_NOT_INITIALIZED",
    ]
    return names[rv] ?? "CKR_0x" + String(rv, radix: 16)
}

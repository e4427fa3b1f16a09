internal import CLibPQ

#if canImport(Glibc)
    import Glibc
#endif

/// libpq's functions, from `libpq.so.5` opened when a PostgreSQL store is first used.
///
/// The module does not link libpq: linked, it would load libpq and the 19 libraries it brings
/// (Kerberos, LDAP, SASL, GnuTLS, p11-kit…) into every host that loads the module, PostgreSQL
/// token or not, and a host without libpq5 installed could not load the module at all. Opened
/// here once per process and never closed (a host's dlclose of the module leaves it loaded).
struct LibPQ: @unchecked Sendable {
    // @unchecked: C function pointers, set once and never changed.
    let connectdbParams: p11k_PQconnectdbParams
    let conninfoParse: p11k_PQconninfoParse
    let conninfoFree: p11k_PQconninfoFree
    let finish: p11k_PQfinish
    let status: p11k_PQstatus
    let transactionStatus: p11k_PQtransactionStatus
    let errorMessage: p11k_PQerrorMessage
    let resultStatus: p11k_PQresultStatus
    let resultErrorField: p11k_PQresultErrorField
    let resultErrorMessage: p11k_PQresultErrorMessage
    let clear: p11k_PQclear
    let ntuples: p11k_PQntuples
    let cmdTuples: p11k_PQcmdTuples
    let getisnull: p11k_PQgetisnull
    let getlength: p11k_PQgetlength
    let getvalue: p11k_PQgetvalue
    let consumeInput: p11k_PQconsumeInput
    let notifies: p11k_PQnotifies
    let freemem: p11k_PQfreemem
    let socket: p11k_PQsocket
    let backendPID: p11k_PQbackendPID
    let sendQuery: p11k_PQsendQuery
    let sendQueryParams: p11k_PQsendQueryParams
    let sendPrepare: p11k_PQsendPrepare
    let sendQueryPrepared: p11k_PQsendQueryPrepared
    let getResult: p11k_PQgetResult
    let isBusy: p11k_PQisBusy
    /// Pipeline mode (libpq 14 and later), or nil with an older libpq.
    let pipeline: Pipeline?

    /// libpq's pipeline mode: several statements sent before their results are read.
    struct Pipeline {
        let enter: p11k_PQenterPipelineMode
        let exit: p11k_PQexitPipelineMode
        let sync: p11k_PQpipelineSync
    }

    /// The library's soname: the ABI these declarations are of (libpq-fe.h, PostgreSQL 9.1 on).
    static let soname = "libpq.so.5"

    /// The functions, or why they cannot be had (libpq5 not installed, a symbol missing).
    static let loaded: Result<LibPQ, StorageError> = load()

    /// The functions; `StorageError.Code.cannotOpen`'s error naming the library when it is missing.
    static func functions() throws(StorageError) -> LibPQ { try loaded.get() }

    private static func load() -> Result<LibPQ, StorageError> {
        var library: DynamicLibrary
        switch DynamicLibrary.open(soname) {
        case .success(let opened): library = opened
        case .failure(let failure):
            return .failure(
                StorageError(
                    .cannotOpen,
                    "the PostgreSQL client library \(soname) cannot be loaded (install Debian's libpq5): "
                        + failure.reason))
        }
        func symbol<F>(_ name: String, as type: F.Type) -> F? { library.function(name, as: type) }
        guard let connectdbParams = symbol("PQconnectdbParams", as: p11k_PQconnectdbParams.self),
            let conninfoParse = symbol("PQconninfoParse", as: p11k_PQconninfoParse.self),
            let conninfoFree = symbol("PQconninfoFree", as: p11k_PQconninfoFree.self),
            let finish = symbol("PQfinish", as: p11k_PQfinish.self),
            let status = symbol("PQstatus", as: p11k_PQstatus.self),
            let transactionStatus = symbol("PQtransactionStatus", as: p11k_PQtransactionStatus.self),
            let errorMessage = symbol("PQerrorMessage", as: p11k_PQerrorMessage.self),
            let resultStatus = symbol("PQresultStatus", as: p11k_PQresultStatus.self),
            let resultErrorField = symbol("PQresultErrorField", as: p11k_PQresultErrorField.self),
            let resultErrorMessage = symbol("PQresultErrorMessage", as: p11k_PQresultErrorMessage.self),
            let clear = symbol("PQclear", as: p11k_PQclear.self),
            let ntuples = symbol("PQntuples", as: p11k_PQntuples.self),
            let cmdTuples = symbol("PQcmdTuples", as: p11k_PQcmdTuples.self),
            let getisnull = symbol("PQgetisnull", as: p11k_PQgetisnull.self),
            let getlength = symbol("PQgetlength", as: p11k_PQgetlength.self),
            let getvalue = symbol("PQgetvalue", as: p11k_PQgetvalue.self),
            let consumeInput = symbol("PQconsumeInput", as: p11k_PQconsumeInput.self),
            let notifies = symbol("PQnotifies", as: p11k_PQnotifies.self),
            let freemem = symbol("PQfreemem", as: p11k_PQfreemem.self),
            let socket = symbol("PQsocket", as: p11k_PQsocket.self),
            let backendPID = symbol("PQbackendPID", as: p11k_PQbackendPID.self),
            let sendQuery = symbol("PQsendQuery", as: p11k_PQsendQuery.self),
            let sendQueryParams = symbol("PQsendQueryParams", as: p11k_PQsendQueryParams.self),
            let sendPrepare = symbol("PQsendPrepare", as: p11k_PQsendPrepare.self),
            let sendQueryPrepared = symbol("PQsendQueryPrepared", as: p11k_PQsendQueryPrepared.self),
            let getResult = symbol("PQgetResult", as: p11k_PQgetResult.self),
            let isBusy = symbol("PQisBusy", as: p11k_PQisBusy.self)
        else {
            return .failure(
                StorageError(
                    .cannotOpen,
                    "\(soname) lacks \(library.missing.joined(separator: ", ")): it is not libpq 9.1 or later"
                ))
        }
        var pipeline: Pipeline?
        if let enter = symbol("PQenterPipelineMode", as: p11k_PQenterPipelineMode.self),
            let exit = symbol("PQexitPipelineMode", as: p11k_PQexitPipelineMode.self),
            let sync = symbol("PQpipelineSync", as: p11k_PQpipelineSync.self)
        {
            pipeline = Pipeline(enter: enter, exit: exit, sync: sync)
        }
        return .success(
            LibPQ(
                connectdbParams: connectdbParams, conninfoParse: conninfoParse, conninfoFree: conninfoFree,
                finish: finish, status: status, transactionStatus: transactionStatus,
                errorMessage: errorMessage,
                resultStatus: resultStatus,
                resultErrorField: resultErrorField,
                resultErrorMessage: resultErrorMessage, clear: clear, ntuples: ntuples, cmdTuples: cmdTuples,
                getisnull: getisnull, getlength: getlength, getvalue: getvalue, consumeInput: consumeInput,
                notifies: notifies, freemem: freemem, socket: socket, backendPID: backendPID,
                sendQuery: sendQuery,
                sendQueryParams: sendQueryParams, sendPrepare: sendPrepare,
                sendQueryPrepared: sendQueryPrepared,
                getResult: getResult, isBusy: isBusy, pipeline: pipeline))
    }
}

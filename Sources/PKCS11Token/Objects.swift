internal import CPKCS11
internal import KeychainCore

// Object management functions (v2.40 §5.7).

@c @implementation
func C_CreateObject(
    _ hSession: CK_SESSION_HANDLE, _ pTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulCount: CK_ULONG,
    _ phObject: UnsafeMutablePointer<CK_OBJECT_HANDLE>?
) -> CK_RV {
    sessionEntry("C_CreateObject", hSession) { (session) throws(P11Error) in
        guard let phObject else { throw P11Error.argumentsBad }
        let template = try readTemplate(pTemplate, ulCount)
        // A trust object is a view of its certificate's trust settings (TrustObjects.swift).
        if let view = TrustView(template: template) {
            let reference = try createTrustObject(view, template, in: session)
            phObject.pointee = ObjectHandle.make(reference, slot: session.slot)
            return
        }
        let reference = try core { () throws(CoreError) in
            try session.token.createObject(template, context: session.context)
        }
        adopt(reference, by: session)
        phObject.pointee = ObjectHandle.make(reference, slot: session.slot)
    }
}

/// Runs a core call on one object. The store reports an object another process destroyed
/// between the core's read and its write as a failure of the store (KeychainStorage's
/// `update` finds no row); when the object is indeed gone, that is CKR_OBJECT_HANDLE_INVALID
/// (v2.40 §5.7), as for an object already gone when the call began, not CKR_DEVICE_ERROR.
private func onObject<T>(
    _ reference: ObjectReference, in session: Session, _ body: () throws(CoreError) -> T
) throws(P11Error) -> T {
    do {
        return try body()
    } catch  where error.code == .storageFailure {
        do throws(CoreError) {
            _ = try session.token.attributes(of: reference, context: session.context, revealing: [])
        } catch  where error.code == .objectNotFound {
            throw P11Error(
                CKR_OBJECT_HANDLE_INVALID, "the object was destroyed meanwhile (by another process?)")
        } catch {}
        throw P11Error(error)
    } catch {
        throw P11Error(error)
    }
}

/// Records a new session object as belonging to `session`, so that it vanishes with it.
func adopt(_ reference: ObjectReference, by session: Session) {
    guard reference.isSessionObject else { return }
    session.lock.withLock { _ = session.objects.insert(reference) }
}

@c @implementation
func C_CopyObject(
    _ hSession: CK_SESSION_HANDLE, _ hObject: CK_OBJECT_HANDLE,
    _ pTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulCount: CK_ULONG,
    _ phNewObject: UnsafeMutablePointer<CK_OBJECT_HANDLE>?
) -> CK_RV {
    sessionEntry("C_CopyObject", hSession) { (session) throws(P11Error) in
        guard let phNewObject else { throw P11Error.argumentsBad }
        let source = try ObjectHandle.reference(hObject, slot: session.slot)
        let template = try readTemplate(pTemplate, ulCount)
        let copy = try onObject(source, in: session) { () throws(CoreError) in
            try session.token.copyObject(source, with: template, context: session.context)
        }
        adopt(copy, by: session)
        phNewObject.pointee = ObjectHandle.make(copy, slot: session.slot)
    }
}

@c @implementation
func C_DestroyObject(_ hSession: CK_SESSION_HANDLE, _ hObject: CK_OBJECT_HANDLE) -> CK_RV {
    stateSessionEntry("C_DestroyObject", hSession) { (state, session) throws(P11Error) in
        let reference = try ObjectHandle.reference(hObject, slot: session.slot)
        if let trust = TrustView.parse(reference) {
            try destroyTrustObject(trust.view, trust.certificate, in: session)
            return
        }
        try onObject(reference, in: session) { () throws(CoreError) in
            try session.token.destroyObject(reference, context: session.context)
        }
        // Whichever session of the application made it (any may destroy it) forgets it, so its
        // bookkeeping does not outlive the object.
        guard reference.isSessionObject else { return }
        for owner in state.sessions(on: session.slot) {
            owner.lock.withLock { _ = owner.objects.remove(reference) }
        }
    }
}

@c @implementation
func C_GetObjectSize(
    _ hSession: CK_SESSION_HANDLE, _ hObject: CK_OBJECT_HANDLE, _ pulSize: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_GetObjectSize", hSession) { (session) throws(P11Error) in
        guard let pulSize else { throw P11Error.argumentsBad }
        let reference = try ObjectHandle.reference(hObject, slot: session.slot)
        let attributes: AttributeSet
        if let trust = TrustView.parse(reference) {
            attributes = try trustObjectAttributes(trust.view, trust.certificate, in: session)
        } else {
            attributes = try core { () throws(CoreError) in
                try session.token.attributes(of: reference, context: session.context, revealing: [])
            }
        }
        // An approximation, as the spec allows: the bytes of every attribute value.
        pulSize.pointee = CK_ULONG(attributes.values.reduce(0) { $0 + $1.count })
    }
}

/// C_GetAttributeValue processes every entry of the template and reports the most
/// relevant failure, as v2.40 §5.7 requires: values that fit are copied, the others get
/// CK_UNAVAILABLE_INFORMATION in ulValueLen.
@c @implementation
func C_GetAttributeValue(
    _ hSession: CK_SESSION_HANDLE, _ hObject: CK_OBJECT_HANDLE,
    _ pTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulCount: CK_ULONG
) -> CK_RV {
    sessionEntry("C_GetAttributeValue", hSession) { (session) throws(P11Error) in
        guard ulCount == 0 || pTemplate != nil else { throw P11Error.argumentsBad }
        let reference = try ObjectHandle.reference(hObject, slot: session.slot)
        let count = try hostCount(ulCount, limit: maximumTemplateCount, what: "a template count")
        let types = (0..<count).map { AttributeType(UInt64(pTemplate?[$0].type ?? 0)) }
        // The core decides what each attribute reads as, and opens only the sealed values
        // asked for: reading a key's label opens none of its secret parts.
        let readings: [Token.AttributeReading]
        if let trust = TrustView.parse(reference) {
            readings = try readTrustObject(types, trust.view, trust.certificate, in: session)
        } else {
            readings = try core { () throws(CoreError) in
                try session.token.read(types, of: reference, context: session.context)
            }
        }
        guard let pTemplate else { return }
        var failure: P11Error? = nil
        for (index, reading) in readings.enumerated() {
            let entry = pTemplate.advanced(by: index)
            let type = types[index]
            let value: [UInt8]
            switch reading {
            case .sensitive:
                entry.pointee.ulValueLen = unavailableInformation
                failure = P11Error(CKR_ATTRIBUTE_SENSITIVE, "attribute \(type) of this key is never revealed")
                continue
            case .absent:
                entry.pointee.ulValueLen = unavailableInformation
                if failure == nil {
                    failure = P11Error(CKR_ATTRIBUTE_TYPE_INVALID, "object has no attribute \(type)")
                }
                continue
            case .value(let bytes):
                value = bytes
            }
            if type.isAttributeArray {
                if !writeAttributeArray(value, into: entry) {
                    failure = P11Error(CKR_BUFFER_TOO_SMALL, "buffer for attribute \(type) is too small")
                }
                continue
            }
            // A short buffer gets CK_UNAVAILABLE_INFORMATION, not the length (v2.40 §5.7).
            do throws(P11Error) {
                try writeOutput(
                    into: entry.pointee.pValue?.assumingMemoryBound(to: UInt8.self),
                    length: &entry.pointee.ulValueLen, size: value.count, shortLength: unavailableInformation
                ) { value }
            } catch {
                failure = P11Error(CKR_BUFFER_TOO_SMALL, "buffer for attribute \(type) is too small")
            }
        }
        if let failure { throw failure }
    }
}

/// Writes an attribute array (CKA_WRAP_TEMPLATE…) into a caller's entry (v2.40 §5.7): with a
/// NULL pValue its length as CK_ATTRIBUTE entries; else into the caller's array, each inner
/// entry like a top-level one (type set, NULL pValue: the length; a value that does not fit:
/// CK_UNAVAILABLE_INFORMATION). False when something did not fit.
private func writeAttributeArray(_ encoded: [UInt8], into entry: UnsafeMutablePointer<CK_ATTRIBUTE>) -> Bool {
    let attributes = (AttributeArray.decode(encoded) ?? [:]).sorted { $0.key < $1.key }
    let size = MemoryLayout<CK_ATTRIBUTE>.size
    let needed = CK_ULONG(attributes.count * size)
    guard let array = entry.pointee.pValue else {
        entry.pointee.ulValueLen = needed
        return true
    }
    guard entry.pointee.ulValueLen >= needed else {
        entry.pointee.ulValueLen = unavailableInformation
        return false
    }
    var fits = true
    for (index, (type, value)) in attributes.enumerated() {
        var inner = array.loadUnaligned(fromByteOffset: index * size, as: CK_ATTRIBUTE.self)
        inner.type = CK_ATTRIBUTE_TYPE(type.rawValue)
        if let target = inner.pValue {
            if inner.ulValueLen >= CK_ULONG(value.count) {
                value.withUnsafeBytes { source in
                    if let base = source.baseAddress {
                        target.copyMemory(from: base, byteCount: source.count)
                    }
                }
                inner.ulValueLen = CK_ULONG(value.count)
            } else {
                inner.ulValueLen = unavailableInformation
                fits = false
            }
        } else {
            inner.ulValueLen = CK_ULONG(value.count)
        }
        array.storeBytes(of: inner, toByteOffset: index * size, as: CK_ATTRIBUTE.self)
    }
    entry.pointee.ulValueLen = needed
    return fits
}

@c @implementation
func C_SetAttributeValue(
    _ hSession: CK_SESSION_HANDLE, _ hObject: CK_OBJECT_HANDLE,
    _ pTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulCount: CK_ULONG
) -> CK_RV {
    sessionEntry("C_SetAttributeValue", hSession) { (session) throws(P11Error) in
        let reference = try ObjectHandle.reference(hObject, slot: session.slot)
        let template = try readTemplate(pTemplate, ulCount)
        if let trust = TrustView.parse(reference) {
            try updateTrustObject(trust.view, trust.certificate, with: template, in: session)
            return
        }
        try onObject(reference, in: session) { () throws(CoreError) in
            try session.token.updateObject(reference, with: template, context: session.context)
        }
    }
}

@c @implementation
func C_FindObjectsInit(
    _ hSession: CK_SESSION_HANDLE, _ pTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulCount: CK_ULONG
) -> CK_RV {
    sessionEntry("C_FindObjectsInit", hSession) { (session) throws(P11Error) in
        let template = try readTemplate(pTemplate, ulCount)
        try session.lock.withLock { () throws(P11Error) in
            guard session.find == nil else {
                throw P11Error(CKR_OPERATION_ACTIVE, "a search is already active: call C_FindObjectsFinal")
            }
            // The results are fixed now (ARCHITECTURE.md §8): later changes do not disturb the search.
            let stored = try core { () throws(CoreError) in
                try session.token.findObjects(template, context: session.context)
            }
            let results = try stored + findTrustObjects(template, in: session)
            session.find = (results, 0, session.context.userLoggedIn)
        }
    }
}

@c @implementation
func C_FindObjects(
    _ hSession: CK_SESSION_HANDLE, _ phObject: UnsafeMutablePointer<CK_OBJECT_HANDLE>?,
    _ ulMaxObjectCount: CK_ULONG, _ pulObjectCount: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_FindObjects", hSession) { (session) throws(P11Error) in
        guard let pulObjectCount, ulMaxObjectCount == 0 || phObject != nil else {
            throw P11Error.argumentsBad
        }
        try session.lock.withLock { () throws(P11Error) in
            guard let find = session.find else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_FindObjectsInit first")
            }
            // The caller's capacity is clamped to what is left, never added to: a count near
            // 2^64 after a partial read must not overflow.
            let remaining = find.results.count - find.position
            let count = try hostCount(
                min(ulMaxObjectCount, CK_ULONG(remaining)), limit: remaining, what: "an object count")
            let end = find.position + count
            for (offset, reference) in find.results[find.position..<end].enumerated() {
                phObject?[offset] = ObjectHandle.make(reference, slot: session.slot)
            }
            pulObjectCount.pointee = CK_ULONG(count)
            session.find?.position = end
        }
    }
}

@c @implementation
func C_FindObjectsFinal(_ hSession: CK_SESSION_HANDLE) -> CK_RV {
    sessionEntry("C_FindObjectsFinal", hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            guard session.find != nil else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "no search is active")
            }
            session.find = nil
        }
    }
}

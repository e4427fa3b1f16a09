# A store on a full file system: the insert that does not fit fails with
# CKR_DEVICE_MEMORY (the spec's code for "the token does not have sufficient
# memory"), the process keeps running, and everything stored before is intact.

# small_store SIZE: puts $STORE on a fresh tmpfs of SIZE, unmounted after the test.
small_store() {
    [[ $(id -u) == 0 ]] || fail "needs root to mount a small tmpfs for the store"
    local mnt=$TEST_TMP/small
    mkdir "$mnt"
    mount -t tmpfs -o "size=$1,mode=0700" p11keychain-it-full "$mnt"
    defer "umount '$mnt' || umount -l '$mnt'"
    new_store "$mnt/store"
}

test_full_disk_fails_the_insert_cleanly_and_keeps_what_was_stored() {
    local log=$TEST_TMP/full.log stored
    small_store 1m
    # The log lives outside the tmpfs: it must not compete for the space.
    run "$P11DRIVE" import --count 100000 --prefix F --log "$log"
    if [[ $RUN_STATUS == 0 ]]; then
        fail "expected the import to fail on a 1 MiB file system, but all 100000 certificates were stored: $(df -h "$STORE" | tail -n 1)"
    fi
    [[ $RUN_STATUS == 1 ]] ||
        fail "expected a clean failure (p11drive status 1 after a CK_RV) when the disk fills, got $(describe_status "$RUN_STATUS"): $(summarize "$RUN_OUT")"
    assert_contains "$RUN_OUT" "returned CKR_DEVICE_MEMORY" "C_CreateObject on a full disk"
    stored=$(wc -l <"$log")
    ((stored > 0)) || fail "not a single certificate fit before the disk was full: $(summarize "$RUN_OUT")"
    # The failing process could still list what it had stored.
    assert_contains "$RUN_OUT" "after error: count $stored" "C_FindObjects in the same process after the failed insert"

    # While the disk is still full: reads work; another writer fails cleanly,
    # or succeeds if closing the first process freed space (a WAL checkpoint).
    assert_labels_present "$log" "certificates stored before the disk was full"
    make_cert late "/CN=Too Late"
    run pkcs11-tool --module "$P11KEYCHAIN_MODULE" --write-object "$CERTS/late.der" --type cert --label late
    ((RUN_STATUS < 128)) ||
        fail "pkcs11-tool --write-object on a full disk was $(describe_status "$RUN_STATUS"): $(summarize "$RUN_OUT")"
    [[ $RUN_STATUS != 0 ]] || stored=$((stored + 1))
    assert_integrity
    assert_eq "$stored" "$(cert_count)" "certificates in the store after the disk filled"
}

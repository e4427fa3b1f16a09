# What the command line prints of a token stored in PostgreSQL: the server's host, database
# and user, never the password its connection string holds (docs/fleet.md), in text and --json
# (dump-keychain's --json names no store).

source "$IT_DIR/postgresql_lib.sh"

test_list_tokens_token_info_and_dump_keychain_name_the_server_never_the_password() {
    pg_start
    local out
    init_pins
    for command in "list-tokens" "list-tokens --json" "--token $TOKEN_LABEL token-info" \
        "--token $TOKEN_LABEL token-info --json" "--token $TOKEN_LABEL dump-keychain"; do
        # shellcheck disable=SC2086 # the words of each command
        out=$(cli $command 2>&1) || fail "$command failed: $(summarize "$out")"
        assert_contains "$out" "postgresql:" "$command: the store's engine"
        assert_contains "$out" "user=p11keychain" "$command: the server's user"
        assert_not_contains "$out" "$PG_PASSWORD" "$command"
    done
}

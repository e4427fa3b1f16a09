# The arithmetic behind bench/'s reports (bench/lib.sh): a benchmark's verdict is only as
# good as its ratios. No module is loaded; these check the helpers on figures whose answers
# are known.

# bench_lib: bench/lib.sh sourced in this test's shell.
bench_lib() {
    # shellcheck source=bench/lib.sh
    source "$IT_REPO/bench/lib.sh"
}

# Each round's module figure is divided by openssl's from the same round, and the median of
# those ratios is the ratio. Dividing the two medians instead would pair the module's fast
# round with openssl's fast round of another time: here it says 1.00, while the module was
# slower than openssl in two rounds of three.
test_bench_ratio_is_the_median_of_the_rounds_ratios() {
    bench_lib
    local module=$TEST_TMP/module openssl=$TEST_TMP/openssl
    add "$module" 1 90
    add "$module" 2 100
    add "$module" 3 120
    add "$openssl" 1 100
    add "$openssl" 2 120
    add "$openssl" 3 80
    assert_eq 100 "$(median "$module")" "median of the module's rounds"
    assert_eq 100 "$(median "$openssl")" "median of openssl's rounds"
    assert_eq 0.9000 "$(paired "$module" "$openssl")" "median of the rounds' ratios 0.90, 0.83, 1.50"
    assert_eq "0.83–1.50" "$(spread "$module" "$openssl")" "lowest and highest round"
}

# A round one side did not measure (a failed run records nothing) leaves the other rounds
# paired with their own partners, not shifted by one.
test_bench_a_missing_round_pairs_no_other() {
    bench_lib
    local module=$TEST_TMP/module openssl=$TEST_TMP/openssl
    add "$module" 1 50
    add "$module" 2 ""
    add "$module" 3 200
    add "$module" 4 80
    add "$openssl" 1 100
    add "$openssl" 2 100
    add "$openssl" 3 100
    add "$openssl" 4 100
    assert_eq 3 "$(wc -l <"$module")" "an empty value is no round"
    assert_eq 0.8000 "$(paired "$module" "$openssl")" "rounds 1, 3 and 4: 0.50, 2.00, 0.80"
    assert_eq "0.50–2.00" "$(spread "$module" "$openssl")" "range over the rounds both measured"
    printf '1 50\n4 80\n' >"$TEST_TMP/two"
    assert_eq 0.6500 "$(paired "$TEST_TMP/two" "$openssl")" "an even count: the middle two"
    assert_eq "" "$(paired "$module" "$TEST_TMP/none")" "no ratio without the other side"
    assert_eq "" "$(median "$TEST_TMP/none")" "no median without rounds"
}

# A verdict judges the unrounded ratio, and shows it where the table's rounding would seem to
# say the opposite.
test_bench_verdict_judges_the_unrounded_ratio() {
    bench_lib
    assert_eq "NOT met (0.948)" "$(verdict 0.9476 ">=" 0.95)" "0.9476 shown as 0.95"
    assert_eq "met" "$(verdict 0.9512 ">=" 0.95)" "0.9512"
    assert_eq "NOT met (5.004)" "$(verdict 5.004 "<=" 5)" "5.004 shown as 5.00"
    assert_eq "" "$(verdict "" ">=" 0.95)" "no value, no verdict"
}

# bench/instructions.sh divides the instructions counted by the calls callgrind recorded: the
# calls of one function summed over its call sites, whether named in full or by ID.
test_bench_callgrind_calls_counts_every_site() {
    bench_lib
    cat >"$TEST_TMP/callgrind.out" <<'EOF'
version: 1
events: Ir
fn=(1) sign_loop
cfn=(2) C_Sign
calls=10 0x10
5 1000
cfn=(3) C_SignInit
calls=10 0x20
6 200
fn=(4) final_check
cfn=(2)
calls=1 0x30
7 100
cfn=(5) C_Signature
calls=7 0x40
8 10
EOF
    assert_eq 11 "$(callgrind_calls C_Sign "$TEST_TMP/callgrind.out")" "C_Sign from two sites"
    assert_eq 10 "$(callgrind_calls C_SignInit "$TEST_TMP/callgrind.out")" "C_SignInit"
    assert_eq 0 "$(callgrind_calls C_Verify "$TEST_TMP/callgrind.out")" "a function never called"
}

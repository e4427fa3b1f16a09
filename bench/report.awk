# Turns report.jq's rows into the markdown table (used by run.sh).
# Column names: -v left=... -v right=... (p11keychain and SoftHSM2 unless given).
# The ratio is left / right; the words after it say which way is
# better for that metric (higher for rates, lower for times and memory).

BEGIN {
    FS = "\t"
    print "| metric | " (left == "" ? "p11keychain" : left) " | " (right == "" ? "SoftHSM2" : right) " | ratio |"
    print "|---|---:|---:|---|"
}

function num(v) {
    return v >= 100 ? sprintf("%.0f", v) : v >= 10 ? sprintf("%.1f", v) : sprintf("%.2f", v)
}

# Two or three significant digits, never in exponent form (0.000071, not 7.1e-05).
function sig(v,    d) {
    if (v >= 100) return sprintf("%.0f", v)
    if (v >= 1) return sprintf("%.3g", v)
    d = 1
    while (v * 10 ^ d < 10 && d < 12) d++
    return sprintf("%." d "f", v)
}

function cell(v, note,    s) {
    if (v ~ /^!/) return substr(v, 2)
    if (v ~ /^>/) return "> " substr(v, 2) " (timeout)"
    s = num(v + 0)
    return note == "" ? s : s " (" note ")"
}

# bound is "" for an exact ratio, "<" or ">" when one side is a lower bound.
function ratio(r, kind, bound,    better, f, word, fbound) {
    better = (kind == "rate") ? (r > 1) : (r < 1)
    f = r >= 1 ? r : 1 / r
    if (bound == "" && f < 1.05) return sig(r) " (about equal)"
    if (kind == "memory") word = better ? "less" : "more"
    else word = better ? "faster" : "slower"
    fbound = bound == "" ? "" : "more than "
    return bound sig(r) " (" fbound sig(f) "× " word ")"
}

{
    a = $3; b = $5; r = "—"
    if (a ~ /^!/ || b ~ /^!/ || (a ~ /^>/ && b ~ /^>/)) r = "—"
    else if (b ~ /^>/) r = ratio(a / substr(b, 2), $2, "< ")
    else if (a ~ /^>/) r = ratio(substr(a, 2) / b, $2, "> ")
    else if (b + 0 > 0) r = ratio(a / b, $2, "")
    printf "| %s | %s | %s | %s |\n", $1, cell(a, $4), cell(b, $6), r
}

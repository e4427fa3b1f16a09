# Rows of the comparison table, for report.awk (used by run.sh).
#
# Inputs: $a, $b: the p11keychain and SoftHSM2 JSON (each slurped, so [0]);
# a module that was not run has "not_run": true. $sizes: "1000,10000,...";
# $smax: SoftHSM2's size cap; $tmax: the largest size p11tool lists at.
#
# Output: one tab-separated line per metric and size:
#   label, kind (time | rate | memory), p11keychain value, note, SoftHSM2 value, note
# A value is a number, ">N" (a lower bound: timed out after N s) or "!text"
# (why there is no number).

def size_label: if . % 1000 == 0 then "\(. / 1000)k" else tostring end;

def why($m; $n; $cap):
  if $m.not_run then "!not run"
  elif ($cap > 0 and $n > $cap) then "!not measured (capped)"
  else "!not measured" end;

# Says how many samples a find measurement took when the time cap cut it short.
def samples($s; $m): if $s.samples < $m.lookups then "n=\($s.samples)" else "" end;

def level_value($key; $m):
  if $key == "import" then
    (if .import then [.import.certs_per_s, ""] else ["!(imported earlier)", ""] end)
  elif $key == "hit50" then [.find_hit.p50_us, samples(.find_hit; $m)]
  elif $key == "hit90" then [.find_hit.p90_us, samples(.find_hit; $m)]
  elif $key == "miss50" then [.find_miss.p50_us, samples(.find_miss; $m)]
  elif $key == "miss90" then [.find_miss.p90_us, samples(.find_miss; $m)]
  elif $key == "load" then [.load.median_ms, ""]
  elif $key == "first" then [.load.first_find_ms, ""]
  elif $key == "rss" then [.load.peak_rss_kb / 1024, ""]
  else error("unknown metric \($key)") end;

def listing($m; $n; $cap):
  ([$m.p11tool[] | select(.objects == $n)] | first) as $r
  | if $r == null then
      (if $m.not_run or ($cap > 0 and $n > $cap) then [why($m; $n; $cap), ""]
       elif $n > $tmax then ["!not measured (capped)", ""]
       elif ($m.p11tool | any(has("timeout_s"))) then
         ["!not measured (timed out at a smaller size)", ""]
       else [why($m; $n; $cap), ""] end)
    elif $r.timeout_s then [">\($r.timeout_s)", ""]
    elif $r.failed then ["!failed (exit \($r.failed))", ""]
    elif $r.listed != $n then [$r.seconds, "listed \($r.listed)"]
    else [$r.seconds, ""] end;

def cell($key; $m; $n; $cap):
  if $key == "p11tool" then listing($m; $n; $cap)
  else ([$m.levels[] | select(.objects == $n)] | first) as $l
    | if $l == null then [why($m; $n; $cap), ""] else ($l | level_value($key; $m)) end
  end;

[ ["import", "rate", "import rate (certs/s)"],
  ["hit50", "time", "find by label, hit, p50 (µs)"],
  ["hit90", "time", "find by label, hit, p90 (µs)"],
  ["miss50", "time", "find by label, miss, p50 (µs)"],
  ["miss90", "time", "find by label, miss, p90 (µs)"],
  ["load", "time", "module load, fresh process (ms)"],
  ["first", "time", "first find in that process (ms)"],
  ["rss", "memory", "peak RSS of that process (MB)"],
  ["p11tool", "time", "`p11tool --list-all-certs` (s)"] ][] as [$key, $kind, $title]
| ($sizes | split(",") | map(tonumber))[] as $n
| [ "\($title) @ \($n | size_label)", $kind ]
  + cell($key; $a[0]; $n; 0) + cell($key; $b[0]; $n; $smax)
| map(tostring) | @tsv

#!/usr/bin/env bash
# Compare `latscope cyclictest` with rt-tests' cyclictest and `latscope
# ptsematest` with rt-tests' ptsematest: the same command lines, run side by
# side, as latscope's drop-ins for those names are meant to be used.
#
#   bench/cyclictest_vs.sh [--pairs N] [--seconds S] [--only LIST] [--out DIR]
#   bench/cyclictest_vs.sh --report-only --out DIR [--only LIST]
#
# --report-only rereads the runs kept in DIR (the rows, medians and verdicts
# are made again from the raw files; nothing is built or run).
#
# 1. Builds latscope in release mode (cargo build --release) and the
#    cyclictest drop-in (cargo build --profile dropin --bin latscope-cyclictest).
# 2. Runs every comparison as N pairs of runs (default 5): pair k runs the
#    original and latscope one after the other, the original first in odd
#    pairs and latscope first in even ones, so that neither tool always meets
#    the machine just after the other (C1 = CPU 1, or 0 on one CPU; L = S *
#    1000, the loops of S seconds at 1000 us, default S = 10; `--json=FILE`
#    is appended to each):
#      ct-1    cyclictest -m -p80 -i1000 -d0 -t1 -a C1 -l L -q   one thread
#      ct-2    cyclictest -m -p80 -i1000 -d0 -t2 -a -l L -q      two threads, pinned (2+ CPUs)
#      ct-all  cyclictest -m -p80 -i1000 -d0 -S -l L -q          one per CPU
#      pt-1    ptsematest -aC1 -p80 -i1000 -d0 -l L -q           one pair
#      pt-all  ptsematest -S -p80 -i1000 -d0 -l L -q             one pair per CPU
#      cd-2    cyclicdeadline -t2 -i4000 -s0 -D S -q             two SCHED_DEADLINE threads
#              (4 ms: Debian's cyclicdeadline needs HRTICK below 3334 us)
#    latscope runs `cyclictest ARGS` through a link named cyclictest to the
#    lean drop-in binary built with the dropin profile (what the package's
#    compat link runs: target/dropin/latscope-cyclictest) and `latscope
#    ptsematest ARGS` (`latscope cyclicdeadline ARGS`), with the same ARGS. --only takes a comma list of these names.
# 3. Prints every run, then per comparison the median over the pairs of each
#    figure for each tool, their ratio latscope/original, and the verdict per
#    goal:
#      cyclictest: avg within 5 % or 1 us; min not higher (1 us slack: the
#        tools' figures are whole us); CPU time per wake-up of the measuring
#        threads not higher (ratio <= 1.0); peak RSS not higher; the same
#        sample counts for -l in every pair.
#      ptsematest: avg within 15 % or 1 us; CPU time per sample not higher.
#      cyclicdeadline: avg within 5 % or 1 us; CPU time per wake-up of the
#        measuring (SCHED_DEADLINE) threads within 5 %.
#
# Where each figure comes from:
#   Latencies and samples: the --json file, which both tools write in
#     rt-tests' layout (cyclictest: thread."N".{cycles,min,avg,max};
#     ptsematest: thread."N".sender.samples and receiver.{min,avg,max}), whole
#     us except avg (2 decimals). Per run: min of the threads' mins, max of
#     their maxes, the sample-weighted mean of their avgs, the sum of samples.
#   CPU time of the measuring threads: /proc/PID/task/TID/schedstat (the
#     scheduler's exact run time of each thread, ns; what getrusage and
#     CLOCK_THREAD_CPUTIME_ID report too), read twice while the run goes on,
#     1.5 s after its start and S - 3 s later, for every SCHED_FIFO thread of
#     the process (cyclictest's timer threads; ptsematest's receivers and
#     senders). For cyclictest, their run time over that window divided by
#     the wake-ups due in it (window / 1000 us per thread: both tools sleep to
#     absolute expiries, -d0) is the CPU time per wake-up: no set-up, exit or
#     main thread in it. Not for ptsematest: it sleeps 1000 us *after* each
#     sample (a relative nanosleep), so how many samples fell in the window is
#     not known from outside (switch-ins count preemptions too, and other
#     sessions' real-time tests preempt on a shared machine).
#   CPU time of the whole process per sample: perf stat -e task-clock (the
#     scheduler's exact run time of every thread of the command, main thread,
#     set-up and exit included; GNU time, which perf starts, adds about a
#     millisecond to both tools) divided by the samples of the JSON. The
#     ptsematest goal is judged on this one; without perf (Debian linux-perf)
#     it is not measured. GNU time's user + system (getrusage, tick-sampled on
#     this kind of VM) is shown too.
#   Peak RSS: GNU time's %M (ru_maxrss of the command: its VmHWM at exit).
#   busy %: how busy all CPUs were over the probe window (/proc/stat idle
#     time), the measured threads included: on a shared machine, the others'
#     load.
#
# With two threads or more, where the threads' periods fall relative to each
# other moves both figures: wake-ups at the same instant on two CPUs cost each
# other (on the 2-CPU KVM guest of docs/benchmarks.md part 7, 4 to 15 % more
# CPU per wake-up and up to 2 us more avg, for both tools). With -S -m
# (ct-all) cyclictest's threads start milliseconds apart, so their phases fall
# anywhere, a new draw every run (part of the run-to-run spread); latscope
# then spreads them over the period on purpose (src/timer/cyclic.rs,
# first_expiry). With -t2 -a (ct-2) both tools' threads wake within tens of
# microseconds of each other. To see the effect, add
# `-A 0` (every thread at once) or `-A 500` (half a period apart) to both by
# hand: both tools take it.
#
# Needs root (SCHED_FIFO, mlockall), rt-tests (cyclictest, ptsematest), jq,
# awk, cargo, ps, GNU time (/usr/bin/time). Bounded in time: every command runs
# under `timeout` (the build 900 s, each run 3 S + 30 s), and on exit, Ctrl-C
# or SIGTERM the running command's whole process group is stopped. Every
# command is printed (prefixed with "+") before it runs; raw outputs are kept
# in the output directory. About 2 * N * (S + 1) s per comparison (defaults:
# 5 comparisons, 10 min). Shared functions: bench/lib.sh.

RTBIN=${RTBIN:-/usr/bin}
PAIRS=5
SECS=10
ONLY="ct-1,ct-2,ct-all,pt-1,pt-all,cd-2"
ORDER="ct-1 ct-2 ct-all pt-1 pt-all cd-2"
OUT=""
REPORT_ONLY=0
BUILD_TIMEOUT=900
INTERVAL_US=1000

REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

parse_options "
--pairs PAIRS a number
--seconds SECS a number
--only ONLY a list
--out OUT a directory
--report-only REPORT_ONLY=1
" "$@"
whole_numbers "--pairs and --seconds" "$PAIRS" "$SECS"
if [ "$PAIRS" -lt 1 ] || [ "$SECS" -lt 4 ]; then
  echo "--pairs must be at least 1, --seconds at least 4" >&2; exit 2
fi
IFS=, read -r -a asked <<<"$ONLY"
for c in "${asked[@]}"; do
  [[ " $ORDER " == *" $c "* ]] || die "--only: unknown comparison '$c' (one of: $ORDER)"
done
COMPARISONS=()
for c in $ORDER; do
  [[ ",$ONLY," == *",$c,"* ]] || continue
  if [ "$c" = ct-2 ] && [ "$(nproc)" -lt 2 ]; then
    echo "ct-2 skipped: one CPU"
    continue
  fi
  COMPARISONS+=("$c")
done
[ "${#COMPARISONS[@]}" -gt 0 ] || die "--only: nothing to run"

if [ "$REPORT_ONLY" = 1 ]; then
  [ -n "$OUT" ] && [ -d "$OUT" ] || die "--report-only needs --out DIR, a directory of earlier runs"
fi
[ "$REPORT_ONLY" = 1 ] || [ "$(id -u)" = 0 ] || die "run as root (SCHED_FIFO priority 80, mlockall)"
for t in cyclictest ptsematest cyclicdeadline; do
  [ -x "$RTBIN/$t" ] || die "$RTBIN/$t not found (apt-get install rt-tests)"
done
need jq "apt-get install jq"
need awk
need cargo
need ps "procps"
need timeout "coreutils"
[ -x /usr/bin/time ] || die "/usr/bin/time not found (apt-get install time)"
[ -r /proc/self/schedstat ] || die "/proc/PID/schedstat missing (kernel without CONFIG_SCHED_INFO): no thread CPU time"
bench_out_dir

LOOPS=$((SECS * 1000000 / INTERVAL_US))
CLK_TCK=$(getconf CLK_TCK)
NCPU=$(nproc)
RUN_TIMEOUT=$((3 * SECS + 30))
PROBE_START=1.5
PROBE_LEN=$((SECS - 3))
if [ "$NCPU" -gt 1 ]; then C1=1; else C1=0; fi
# snapshot (bench/lib.sh) records the /proc/stat line of CPU $CPU: all CPUs.
CPU=""

if [ "$REPORT_ONLY" = 0 ]; then
  print_machine "$RTBIN/cyclictest" "$RTBIN/ptsematest"
  echo "loops per run: $LOOPS ($SECS s at $INTERVAL_US us); pairs of runs: $PAIRS"
  echo
  build_latscope "$BUILD_TIMEOUT"
  # The cyclictest drop-in as the package ships it: the lean binary, built
  # with the dropin profile, run through a link named cyclictest.
  run_bounded build-dropin "$BUILD_TIMEOUT" cargo build --profile dropin \
    --bin latscope-cyclictest --manifest-path "$REPO/Cargo.toml" \
    || die "build of the drop-in failed (see $OUT/build-dropin.err)"
  mkdir -p "$OUT/compat"
  ln -sfn "${CARGO_TARGET_DIR:-$REPO/target}/dropin/latscope-cyclictest" "$OUT/compat/cyclictest"
fi

# args_of NAME: sets TOOL (the original's name), ARGS (without --json) and
# IV, every thread's period in us.
args_of() {
  local common=(-p80 -i"$INTERVAL_US" -d0)
  IV=$INTERVAL_US
  case "$1" in
    ct-1)   TOOL=cyclictest; ARGS=(-m "${common[@]}" -t1 -a "$C1" -l "$LOOPS" -q) ;;
    ct-2)   TOOL=cyclictest; ARGS=(-m "${common[@]}" -t2 -a -l "$LOOPS" -q) ;;
    ct-all) TOOL=cyclictest; ARGS=(-m "${common[@]}" -S -l "$LOOPS" -q) ;;
    pt-1)   TOOL=ptsematest; ARGS=(-a"$C1" "${common[@]}" -l "$LOOPS" -q) ;;
    pt-all) TOOL=ptsematest; ARGS=(-S "${common[@]}" -l "$LOOPS" -q) ;;
    cd-2)   TOOL=cyclicdeadline; IV=4000; ARGS=(-t2 -i"$IV" -s0 -D "$SECS" -q) ;;
  esac
}

# probe_fields NAME: "window_s rt_threads rt_run_ns rt_switchins busy_pct"
# from $OUT/NAME.probe ("-" when missing), over the SCHED_FIFO/RR/DEADLINE threads
# present in both snapshots.
probe_fields() {
  awk -v hz="$CLK_TCK" -v ncpu="$NCPU" '
    $1 == "t" { nt++; if (nt % 2) t0 = $2; else tm[nt / 2] = (t0 + $2) / 2; next }
    $1 == "task" { s = int(nt / 2) + 1; if ($4 == 1 || $4 == 2 || $4 == 6) { run[s, $2] = $5; pc[s, $2] = $7; tids[$2] = 1 }; next }
    $1 == "cpu" { s = int(nt / 2) + 1; idle[s] = $5 + $6 }
    END {
      if (nt < 4) { print "- - - - -"; exit }
      win = tm[2] - tm[1]; n = 0; r = 0; p = 0
      for (t in tids) {
        if (!((1, t) in run) || !((2, t) in run)) continue
        n++; r += run[2, t] - run[1, t]; p += pc[2, t] - pc[1, t]
      }
      busy = win > 0 ? 100 * (1 - (idle[2] - idle[1]) / hz / win / ncpu) : -1
      printf "%.3f %d %.0f %.0f %.1f\n", win, n, r, p, busy
    }' "$OUT/$1.probe"
}

# One row per run (tab separated):
ROWS_HEADER="comparison pair tool samples min_us avg_us max_us thread_cpu_per_wakeup_ns rt_threads task_clock_per_sample_ns maxrss_kb proc_cpu_s busy_pct"
ROWS="$OUT/rows.tsv"
: >"$ROWS"

# one_run NAME PAIR WHO: runs the original (WHO = orig) or latscope with
# NAME's arguments.
one_run() {
  local name=$1 pair=$2 who=$3 cmd
  args_of "$name"
  if [ "$who" = orig ]; then
    cmd=("$RTBIN/$TOOL")
  elif [ "$TOOL" = cyclictest ]; then
    cmd=("$OUT/compat/cyclictest")
  else
    cmd=("$LATSCOPE" "$TOOL")
  fi
  local base="$name-$pair-$who"
  local perf=()
  have_perf && perf=(perf stat -x, -e task-clock -o "$OUT/$base.perf")
  RUN_PROBE=probe_threads run_bounded "$base" "$RUN_TIMEOUT" "${perf[@]}" \
    /usr/bin/time -f "%M %U %S" -o "$OUT/$base.time" \
    "${cmd[@]}" "${ARGS[@]}" --json="$OUT/$base.json"
}

# make_row NAME PAIR WHO: appends the row of that run, from its files.
make_row() {
  local name=$1 pair=$2 who=$3 label probe_f
  local base="$name-$pair-$who"
  [ -s "$OUT/$base.json" ] || { echo "  !! $OUT/$base.json missing: no row" >&2; return 1; }
  args_of "$name"
  if [ "$who" = orig ]; then label=$TOOL; else label=latscope; fi
  # The measuring threads per sample: cyclictest's threads each take one;
  # a ptsematest pair is two threads for one sample.
  local per=1
  [ "$TOOL" = ptsematest ] && per=2
  read -r -a probe_f <<<"$(probe_fields "$base")"
  local task_ms=-
  [ -s "$OUT/$base.perf" ] && task_ms=$(awk -F, '/task-clock/ { print $1 }' "$OUT/$base.perf")
  jq -r --arg c "$name" --arg p "$pair" --arg tool "$label" --arg probe "${probe_f[*]}" \
     --arg time "$(tail -n 1 "$OUT/$base.time" 2>/dev/null)" --arg task_ms "${task_ms:--}" \
     --argjson per "$per" --argjson interval "$IV" '
    [.thread[] | if .receiver then
        {n: .sender.samples, min: .receiver.min, avg: .receiver.avg, max: .receiver.max}
      else {n: .cycles, min: .min, avg: .avg, max: .max} end] as $t |
    ($t | map(.n) | add) as $n |
    ($probe | split(" ")) as $pr | ($time | split(" ")) as $tm |
    (if $per != 1 or $pr[0] == "-" or ($pr[1] | tonumber) == 0 then "-" else
       (($pr[2] | tonumber) / (($pr[0] | tonumber) * 1e6 / $interval * ($pr[1] | tonumber)))
       | . * 10 | round / 10 end) as $cpu |
    (if $task_ms == "-" then "-" else ($task_ms | tonumber) * 1e6 / $n | . * 10 | round / 10 end) as $task |
    [$c, $p, $tool, $n, ($t | map(.min) | min), ([$t[] | .n * .avg] | add / $n * 100 | round / 100),
     ($t | map(.max) | max), $cpu, $pr[1], $task, $tm[0],
     (((($tm[1] // "0") | tonumber) + (($tm[2] // "0") | tonumber)) * 1000 | round / 1000), $pr[4]] | map(tostring) | @tsv' \
    "$OUT/$base.json" >>"$ROWS" || echo "  !! cannot read $OUT/$base.json" >&2
}

if [ "$REPORT_ONLY" = 0 ]; then
  echo "== runs"
  for name in "${COMPARISONS[@]}"; do
    for pair in $(seq 1 "$PAIRS"); do
      if [ $((pair % 2)) = 1 ]; then order="orig latscope"; else order="latscope orig"; fi
      for who in $order; do one_run "$name" "$pair" "$who"; done
    done
  done
  echo
fi
for name in "${COMPARISONS[@]}"; do
  for json in "$OUT/$name"-*-orig.json; do
    [ -e "$json" ] || continue
    pair=${json#"$OUT/$name-"}; pair=${pair%-orig.json}
    for who in orig latscope; do make_row "$name" "$pair" "$who"; done
  done
done

echo "== every run ($ROWS)"
{ echo "$ROWS_HEADER" | tr ' ' '\t'; cat "$ROWS"; } | column -t -s $'\t'
echo

# Medians per comparison and tool, ratios, verdicts.
echo "== medians over the pairs, latscope / original, verdicts"
awk -F'\t' '
  function median(key,   n, i, j, t, a) {
    n = split(vals[key], a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    if (n == 0) return "-"
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  # (A function: in a printf argument list, `R > 0` would be a redirection.)
  function pct(d, r) { return r > 0 ? 100 * d / r : 0 }
  function add(key, v) { if (v != "-" && v != "") vals[key] = vals[key] " " v }
  {
    c = $1; tool = ($3 == "latscope") ? "L" : "R"; if (tool == "R") ref[c] = $3
    if (!(c in seen)) { seen[c] = 1; order[++k] = c }
    add(c SUBSEP tool SUBSEP "samples", $4); add(c SUBSEP tool SUBSEP "min", $5)
    add(c SUBSEP tool SUBSEP "avg", $6); add(c SUBSEP tool SUBSEP "max", $7)
    add(c SUBSEP tool SUBSEP "cpu", $8); add(c SUBSEP tool SUBSEP "task", $10); add(c SUBSEP tool SUBSEP "rss", $11)
    add(c SUBSEP tool SUBSEP "proc", $12); add(c SUBSEP "busy", $13)
    samples[c, $2, tool] = $4; pairs[c, $2] = 1
  }
  END {
    for (i = 1; i <= k; i++) {
      c = order[i]; r = ref[c]
      printf "%s (%s), busy %% median %s\n", c, r, median(c SUBSEP "busy")
      printf "  %-26s %12s %12s %8s\n", "figure (median)", "latscope", r, "ratio"
      split("samples min avg max cpu task rss proc", f, " ")
      split("samples|min us|avg us|max us|thread CPU/wake-up, ns|process CPU/sample, ns|peak RSS, KiB|process CPU (times), s", label, "|")
      for (j = 1; j <= 8; j++) {
        L = median(c SUBSEP "L" SUBSEP f[j]); R = median(c SUBSEP "R" SUBSEP f[j])
        ratio = (L != "-" && R != "-" && R + 0 != 0) ? sprintf("%.2f", L / R) : "-"
        m[f[j], "L"] = L; m[f[j], "R"] = R
        printf "  %-26s %12s %12s %8s\n", label[j], L, R, ratio
      }
      L = m["avg", "L"]; R = m["avg", "R"]; d = L - R; ad = d < 0 ? -d : d
      if (c ~ /^cd/) {
        printf "  avg within 5%% or 1 us: %s (%+.2f us, %+.1f %%)\n", (ad <= 0.05 * R || ad <= 1) ? "MET" : "NOT MET", d, pct(d, R)
        printf "  CPU per wake-up within 5%%: %s\n", (m["cpu", "R"] > 0 && m["cpu", "L"] <= 1.05 * m["cpu", "R"]) ? "MET" : "NOT MET"
      } else if (c ~ /^ct/) {
        printf "  avg within 5%% or 1 us: %s (%+.2f us, %+.1f %%)\n", (ad <= 0.05 * R || ad <= 1) ? "MET" : "NOT MET", d, pct(d, R)
        printf "  min not higher (1 us slack): %s\n", (m["min", "L"] <= m["min", "R"] + 1) ? "MET" : "NOT MET"
        printf "  CPU per wake-up ratio <= 1.0: %s\n", (m["cpu", "R"] > 0 && m["cpu", "L"] <= m["cpu", "R"]) ? "MET" : "NOT MET"
        printf "  peak RSS not higher: %s\n", (m["rss", "L"] <= m["rss", "R"]) ? "MET" : "NOT MET"
        same = 1; np = 0
        for (key in pairs) { split(key, kk, SUBSEP); if (kk[1] != c) continue; np++
          if (samples[c, kk[2], "L"] != samples[c, kk[2], "R"]) same = 0 }
        printf "  same sample counts in every pair (%d): %s\n", np, same ? "MET" : "NOT MET"
      } else {
        printf "  avg within 15%% or 1 us: %s (%+.2f us, %+.1f %%)\n", (ad <= 0.15 * R || ad <= 1) ? "MET" : "NOT MET", d, pct(d, R)
        printf "  process CPU per sample ratio <= 1.0: %s\n", (m["task", "R"] > 0 && m["task", "L"] <= m["task", "R"]) ? "MET" : (m["task", "R"] == "-" ? "not measured (no perf)" : "NOT MET")
      }
      print ""
    }
  }' "$ROWS"
echo "raw outputs: $OUT"

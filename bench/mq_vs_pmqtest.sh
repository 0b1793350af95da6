#!/usr/bin/env bash
# Compare `latscope mq` with rt-tests' pmqtest on this machine.
#
#   bench/mq_vs_pmqtest.sh [--memory] [--runs N] [--loops N] [--out DIR]
#
# 1. Builds latscope in release mode (cargo build --release).
# 2. Runs `latscope mq` and `pmqtest` with the same settings
#    (-S -p99 -i100 -l LOOPS -q), alternately, N times each (default 3), and
#    prints per run and per pair: samples, min/avg/max in microseconds, the
#    ratio of averages, and the CPU time (user+system) per sample.
# 3. If perf is installed (Debian package linux-perf): the precise CPU time
#    (perf stat -e task-clock) per sample of both tools with equal pairs
#    (-S -p99 -i100 -d0 -l LOOPS -q), N runs each, alternately.
# 4. With --memory: runs `latscope mq -S -p99 -i100 -D 5 -q` and `-D 60 -q`
#    under /usr/bin/time -v and prints both maximum resident set sizes
#    (about 70 s more).
#
# Where the figures come from:
#   latscope: its JSON (--json FILE), tests[0].series[i]: samples, min_ns,
#             avg_ns, max_ns (exact, CLOCK_MONOTONIC nanoseconds).
#   pmqtest:  its final lines with -q ("#1 -> #0, Min 1, Cur 2, Avg 2, Max 70",
#             integer microseconds) and its JSON (--json FILE):
#             thread."N".receiver.{min,avg,max} (avg with 2 decimals) and
#             thread."N".sender.samples. pmqtest -S stops every pair as soon as
#             the fastest pair has done its loops, so the slower pairs have fewer
#             samples; the sample counts below are the ones it actually took.
#   CPU time: user+system time of the measured process (bash `times` in a
#             subshell that runs only that process; 1 ms resolution), divided
#             by the samples of all pairs together.
#
# Needs root (SCHED_FIFO 99, mlockall), pmqtest (Debian package rt-tests), jq,
# awk, cargo, and /usr/bin/time (Debian package `time`) for --memory.
#
# Bounded in time: every command runs under `timeout` (the build 900 s, each
# comparison run 120 s, the memory runs their duration + 60 s), and on exit,
# Ctrl-C or SIGTERM the running command's whole process group is stopped, so
# nothing is left behind. Every command is printed (prefixed with "+") before
# it runs. Raw outputs are kept in the output directory (printed at the end).

set -uo pipefail
set -m   # every background job gets its own process group: we can stop it whole

PMQTEST=${PMQTEST:-/usr/bin/pmqtest}
RUNS=3
LOOPS=20000
MEMORY=0
OUT=""
BUILD_TIMEOUT=900
RUN_TIMEOUT=120

usage() {
  sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}

while [ $# -gt 0 ]; do
  case "$1" in
    --memory) MEMORY=1 ;;
    --runs) RUNS=${2:?--runs needs a number}; shift ;;
    --loops) LOOPS=${2:?--loops needs a number}; shift ;;
    --out) OUT=${2:?--out needs a directory}; shift ;;
    -h|--help) usage 0 ;;
    *) echo "unknown option: $1" >&2; usage 2 >&2 ;;
  esac
  shift
done
case "$RUNS$LOOPS" in *[!0-9]*) echo "--runs and --loops take whole numbers" >&2; exit 2 ;; esac
[ "$RUNS" -ge 1 ] && [ "$LOOPS" -ge 1 ] || { echo "--runs and --loops must be at least 1" >&2; exit 2; }

REPO=$(cd "$(dirname "$0")/.." && pwd)
LATSCOPE="$REPO/target/release/latscope"

die() { echo "error: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (SCHED_FIFO priority 99 and mlockall)"
[ -x "$PMQTEST" ] || die "$PMQTEST not found (apt-get install rt-tests)"
command -v jq >/dev/null || die "jq not found (apt-get install jq)"
command -v awk >/dev/null || die "awk not found"
command -v cargo >/dev/null || die "cargo not found"
command -v timeout >/dev/null || die "timeout (coreutils) not found"
if [ "$MEMORY" = 1 ] && [ ! -x /usr/bin/time ]; then
  die "/usr/bin/time not found (apt-get install time), needed for --memory"
fi

if [ -z "$OUT" ]; then
  OUT=$(mktemp -d /tmp/latscope-bench.XXXXXX) || die "mktemp failed"
else
  mkdir -p "$OUT" || die "cannot create $OUT"
fi

# ---------------------------------------------------------------- process control
CURRENT_JOB=""   # process group id of the command running now

stop_current() {
  local pg=$CURRENT_JOB
  [ -n "$pg" ] || return 0
  CURRENT_JOB=""
  kill -TERM -- "-$pg" 2>/dev/null || return 0
  local i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 -- "-$pg" 2>/dev/null || return 0
    sleep 0.5
  done
  kill -KILL -- "-$pg" 2>/dev/null
}

on_signal() {
  echo >&2
  echo "interrupted: stopping the running command" >&2
  stop_current
  exit 130
}
trap stop_current EXIT
trap on_signal INT TERM HUP

show() { # prints a command the way it can be pasted into a shell
  local out="+" a
  for a in "$@"; do out+=" $(printf '%q' "$a")"; done
  echo "$out"
}

# run_bounded NAME SECONDS CMD...: runs CMD in its own process group under
# `timeout`, stdout to $OUT/NAME.out, stderr to $OUT/NAME.err; writes the
# user and system CPU seconds of CMD to $OUT/NAME.cpu and its wall time to
# $OUT/NAME.wall. Returns CMD's exit status.
run_bounded() {
  local name=$1 secs=$2
  shift 2
  show "$@"
  (
    t0=$EPOCHREALTIME
    timeout --foreground -k 5 "$secs" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
    rc=$?
    t1=$EPOCHREALTIME
    # `times`, second line: CPU time of this subshell's children, i.e. of
    # timeout (negligible, it only waits) and the command itself.
    # (`times` must not run in a pipeline: a forked subshell starts at zero.)
    times >"$OUT/$name.times"
    awk 'NR==2 { split($1, u, /[ms]/); split($2, s, /[ms]/);
      printf "%.3f %.3f\n", u[1]*60 + u[2], s[1]*60 + s[2] }' "$OUT/$name.times" >"$OUT/$name.cpu"
    echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }' >"$OUT/$name.wall"
    exit $rc
  ) &
  CURRENT_JOB=$!
  wait "$CURRENT_JOB"
  local rc=$?
  CURRENT_JOB=""
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "  !! timed out after ${secs}s (exit $rc)" >&2
  elif [ "$rc" != 0 ]; then
    echo "  !! exit status $rc; stderr:" >&2
    sed 's/^/     /' "$OUT/$name.err" >&2
  fi
  return "$rc"
}

# ---------------------------------------------------------------- machine
echo "== machine"
echo "nproc: $(nproc)   kernel: $(uname -r)   clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
virt=$(systemd-detect-virt 2>/dev/null || true)
grep -q '^flags.* hypervisor' /proc/cpuinfo && hv="yes" || hv="no"
echo "virtualization: systemd-detect-virt=${virt:-n/a}, cpuinfo hypervisor flag=$hv   load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "pmqtest: $("$PMQTEST" --help 2>&1 | head -1)   output directory: $OUT"
# The build takes the working tree as it is: say which state was measured.
rev=$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo "not a git checkout")
echo "latscope source: $rev$(git -C "$REPO" status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null | awk 'NR==1 {printf " (uncommitted changes:"} {printf " %s", $2} END {if (NR) printf ")"}')"
echo

# ---------------------------------------------------------------- build
echo "== build"
run_bounded build "$BUILD_TIMEOUT" cargo build --release --manifest-path "$REPO/Cargo.toml" \
  || die "build failed (see $OUT/build.err)"
[ -x "$LATSCOPE" ] || die "$LATSCOPE missing after the build"
echo

# ---------------------------------------------------------------- comparison
SETTINGS=(-S -p99 -i100 -l "$LOOPS" -q)
ROWS="$OUT/rows.tsv"   # run tool pair samples min_us avg_us max_us avg_int cpu_s wall_s
: >"$ROWS"
failed=0

echo "== comparison: ${SETTINGS[*]}, $RUNS runs each, alternating"
for run in $(seq 1 "$RUNS"); do
  # latscope
  name="latscope-$run"
  if run_bounded "$name" "$RUN_TIMEOUT" "$LATSCOPE" mq "${SETTINGS[@]}" --json "$OUT/$name.json"; then
    read -r u s <"$OUT/$name.cpu"
    wall=$(cat "$OUT/$name.wall")
    jq -r --arg run "$run" --arg cpu "$(echo "$u $s" | awk '{print $1+$2}')" --arg wall "$wall" '
      .tests[0].series | to_entries[] |
      [$run, "latscope", (.key|tostring), (.value.samples|tostring),
       (.value.min_ns/1000|tostring), (.value.avg_ns/1000|tostring),
       (.value.max_ns/1000|tostring), "-", $cpu, $wall] | @tsv' \
      "$OUT/$name.json" >>"$ROWS" || { echo "  !! cannot parse $OUT/$name.json" >&2; failed=1; }
  else
    failed=1
  fi
  # pmqtest
  name="pmqtest-$run"
  if run_bounded "$name" "$RUN_TIMEOUT" "$PMQTEST" "${SETTINGS[@]}" --json "$OUT/$name.json"; then
    read -r u s <"$OUT/$name.cpu"
    wall=$(cat "$OUT/$name.wall")
    # Final lines: "#1 -> #0, Min    1, Cur    2, Avg    2, Max   70" (pair = #0 / 2)
    awk '/^#[0-9]+ -> #[0-9]+, Min/ {
           gsub(/[#,]/, ""); print $3/2, $5, $9, $11 }' "$OUT/$name.out" >"$OUT/$name.lines"
    jq -r '.thread | to_entries[] |
      [.key, .value.sender.samples, .value.receiver.avg] | @tsv' "$OUT/$name.json" \
      >"$OUT/$name.jsonrows" || { echo "  !! cannot parse $OUT/$name.json" >&2; failed=1; }
    # Join: min/max/integer avg from the lines, exact avg and samples from the JSON.
    awk -v run="$run" -v cpu="$(echo "$u $s" | awk '{print $1+$2}')" -v wall="$wall" '
      NR == FNR { min[$1] = $2; avgint[$1] = $3; max[$1] = $4; next }
      { p = $1; printf "%s\tpmqtest\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
          run, p, $2, (p in min ? min[p] : "?"), $3, (p in max ? max[p] : "?"),
          (p in avgint ? avgint[p] : "?"), cpu, wall }' \
      "$OUT/$name.lines" "$OUT/$name.jsonrows" >>"$ROWS"
  else
    failed=1
  fi
done
echo

# ---------------------------------------------------------------- report
echo "== results (microseconds; latscope from JSON ns/1000, pmqtest min/max from its final lines, avg from its JSON; pmqtest's integer Avg in brackets)"
awk -F'\t' '
  { key = $1 SUBSEP $3; tools[$2] = 1
    n[$2, key] = $4; mn[$2, key] = $5; av[$2, key] = $6; mx[$2, key] = $7; ai[$2, key] = $8
    if (!(($1, $3) in seen)) { seen[$1, $3] = 1; order[++k] = key }
    cpu[$2, $1] = $9; wall[$2, $1] = $10; runs[$1] = 1
    tot[$2, $1] += $4 }
  END {
    printf "%-4s %-4s | %-29s | %-36s | %s\n", "run", "pair",
      "latscope samples min/avg/max", "pmqtest samples min/avg[int]/max", "avg ratio L/P"
    for (i = 1; i <= k; i++) {
      split(order[i], a, SUBSEP); key = order[i]
      l = ("latscope" SUBSEP key) in n; p = ("pmqtest" SUBSEP key) in n
      ls = l ? sprintf("%6d %5.2f/%5.2f/%6.1f", n["latscope", key], mn["latscope", key], av["latscope", key], mx["latscope", key]) : "(no data)"
      ps = p ? sprintf("%6d %3d/%5.2f[%d]/%4d", n["pmqtest", key], mn["pmqtest", key], av["pmqtest", key], ai["pmqtest", key], mx["pmqtest", key]) : "(no data)"
      r = (l && p && av["pmqtest", key] > 0) ? sprintf("%.2f", av["latscope", key] / av["pmqtest", key]) : "-"
      printf "%-4s %-4s | %-29s | %-36s | %s\n", a[1], a[2], ls, ps, r
    }
    print ""
    print "CPU time (user+system) per sample, all pairs:"
    printf "%-4s | %-40s | %-40s\n", "run", "latscope cpu_s/samples = us/sample (wall)", "pmqtest cpu_s/samples = us/sample (wall)"
    for (r in runs) rl[++nr] = r
    for (i = 1; i <= nr; i++) for (j = i + 1; j <= nr; j++) if (rl[j] + 0 < rl[i] + 0) { t = rl[i]; rl[i] = rl[j]; rl[j] = t }
    for (i = 1; i <= nr; i++) {
      r = rl[i]; line = sprintf("%-4s", r)
      for (t = 1; t <= 2; t++) {
        tool = (t == 1 ? "latscope" : "pmqtest")
        if ((tool SUBSEP r) in tot && tot[tool, r] > 0) {
          line = line sprintf(" | %6.3f s / %6d = %6.2f us (%5.1f s)%5s", cpu[tool, r], tot[tool, r], cpu[tool, r] * 1e6 / tot[tool, r], wall[tool, r], "")
          sc[tool] += cpu[tool, r]; ss[tool] += tot[tool, r]
        } else line = line sprintf(" | %-40s", "(no data)")
      }
      print line
    }
    for (t = 1; t <= 2; t++) { tool = (t == 1 ? "latscope" : "pmqtest")
      if (ss[tool] > 0) printf "%-8s all runs: %.3f s / %d samples = %.2f us per sample\n", tool, sc[tool], ss[tool], sc[tool] * 1e6 / ss[tool] }
  }' "$ROWS"
echo

echo "== goals (per pair over all runs: avg = sample-weighted mean, min = lowest, CPU = all runs)"
awk -F'\t' '
  { w[$2, $3] += $4; s[$2, $3] += $4 * $6; pairs[$3] = 1
    if (!(($2, $3) in m) || $5 < m[$2, $3]) m[$2, $3] = $5
    if (!(($2, $1) in c)) { c[$2, $1] = $9; cs[$2] += $9 }
    tot[$2] += $4 }
  END {
    for (p in pairs) {
      if (!(("latscope" SUBSEP p) in w) || !(("pmqtest" SUBSEP p) in w)) { print "pair " p ": missing data"; continue }
      la = s["latscope", p] / w["latscope", p]; pa = s["pmqtest", p] / w["pmqtest", p]
      d = la - pa; ad = d < 0 ? -d : d
      ok = (ad <= 0.15 * pa || ad <= 0.5) ? "MET" : "NOT MET"
      printf "pair %s avg: latscope %.2f us, pmqtest %.2f us, ratio %.2f, difference %+.2f us -> %s (goal: within 15%% or 0.5 us)\n", p, la, pa, la / pa, d, ok
      lm = m["latscope", p]; pm = m["pmqtest", p]
      printf "pair %s min: latscope %.2f us, pmqtest %d us -> %s (goal: no higher); at pmqtest'"'"'s 1 us resolution (latscope truncated to %d us): %s\n", p, lm, pm, (lm <= pm ? "MET" : "NOT MET"), int(lm), (int(lm) <= pm ? "MET" : "NOT MET")
    }
    if (tot["latscope"] > 0 && tot["pmqtest"] > 0) {
      lc = cs["latscope"] * 1e6 / tot["latscope"]; pc = cs["pmqtest"] * 1e6 / tot["pmqtest"]
      printf "CPU per sample: latscope %.2f us, pmqtest %.2f us, ratio %.2f -> %s (goal: no higher)\n", lc, pc, lc / pc, (lc <= pc ? "MET" : "NOT MET")
    }
  }' "$ROWS" | sort
echo

# ---------------------------------------------------------------- CPU, precise
# `times` (above) is tick-sampled on this kind of VM and varies by +-10 % from
# run to run; perf's task-clock is the scheduler's exact run time. With -d0 both
# tools run for the same wall time (pmqtest stops all pairs with the first one).
if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
  echo "== CPU time per sample, precise (perf stat -e task-clock): -S -p99 -i100 -d0 -l $LOOPS -q, $RUNS runs each, alternating"
  : >"$OUT/taskclock.txt"
  for run in $(seq 1 "$RUNS"); do
    for tool in latscope pmqtest; do
      name="taskclock-$tool-$run"
      if [ "$tool" = latscope ]; then cmd=("$LATSCOPE" mq); else cmd=("$PMQTEST"); fi
      if ! run_bounded "$name" "$RUN_TIMEOUT" perf stat -x, -e task-clock -o "$OUT/$name.perf" \
          "${cmd[@]}" -S -p99 -i100 -d0 -l "$LOOPS" -q --json "$OUT/$name.json"; then
        failed=1
        continue
      fi
      ms=$(awk -F, '/task-clock/ {print $1}' "$OUT/$name.perf")
      if [ "$tool" = latscope ]; then
        samples=$(jq '[.tests[0].series[].samples] | add' "$OUT/$name.json")
      else
        samples=$(jq '[.thread[].sender.samples] | add' "$OUT/$name.json")
      fi
      echo "$tool $run $ms $samples" >>"$OUT/taskclock.txt"
      awk -v t="$tool" -v r="$run" -v ms="$ms" -v n="$samples" \
        'BEGIN { printf "  %-8s run %d: %8.1f ms / %6d samples = %5.2f us per sample\n", t, r, ms, n, ms * 1000 / n }'
    done
  done
  awk '{ ms[$1] += $3; n[$1] += $4 }
    END {
      if (n["latscope"] > 0 && n["pmqtest"] > 0) {
        l = ms["latscope"] * 1000 / n["latscope"]; p = ms["pmqtest"] * 1000 / n["pmqtest"]
        printf "  all runs: latscope %.2f us, pmqtest %.2f us per sample, ratio %.2f -> %s (goal: no higher)\n",
          l, p, l / p, (l <= p ? "MET" : "NOT MET")
      }
    }' "$OUT/taskclock.txt"
  echo
else
  echo "== CPU time per sample, precise: skipped (perf not available: apt-get install linux-perf)"
  echo
fi

# ---------------------------------------------------------------- memory
if [ "$MEMORY" = 1 ]; then
  echo "== memory: maximum resident set size of latscope mq -S -p99 -i100 -D <T> -q"
  for d in 5 60; do
    name="memory-${d}s"
    if run_bounded "$name" $((d + 60)) /usr/bin/time -v "$LATSCOPE" mq -S -p99 -i100 -D "$d" -q; then
      rss=$(awk -F': *' '/Maximum resident set size/ {print $2}' "$OUT/$name.err")
      samples=$(awk '/^pair [0-9]/ { for (i = 3; i < NF; i++) if ($i == "us") { s += $(i + 1); break } }
        END { print s + 0 }' "$OUT/$name.out")
      echo "  -D $d: max RSS ${rss:-?} kB  (samples taken: $samples)"
      echo "$d ${rss:-0}" >>"$OUT/memory.txt"
    else
      failed=1
    fi
  done
  if [ -s "$OUT/memory.txt" ] && [ "$(wc -l <"$OUT/memory.txt")" = 2 ]; then
    awk 'NR==1 {a = $2} NR==2 {b = $2} END {
      printf "  growth from 5 s to 60 s: %+d kB (%+.1f%%) -> %s\n", b - a, (b - a) * 100 / a,
        (b - a <= 0.05 * a ? "no growth beyond 5% (MET)" : "grows (NOT MET)") }' "$OUT/memory.txt"
  fi
  echo
fi

# ---------------------------------------------------------------- leftovers
left=$(ls /dev/mqueue 2>/dev/null | grep -E '^(latscope-|syncmsg|testmsg)' || true)
[ -z "$left" ] || echo "warning: message queues left in /dev/mqueue: $left" >&2
echo "raw outputs: $OUT"
exit "$failed"

# shellcheck shell=bash
# Shared by the comparison scripts in bench/; sourced, not run.
#
# The calling script sets REPO (repository root) and OUT (output directory,
# or "" for a fresh one from bench_out_dir) and then uses:
#
#   die MSG | need CMD HINT           stop with a message / check a tool
#   bench_out_dir                     create $OUT (mktemp when empty)
#   bench_options "NAME..." ARGS...   the options --NAME VALUE among pairs seconds cpu
#                                     threshold tests out, into PAIRS SECS CPU THRESHOLD
#                                     TESTS OUT; anything else: the usage, exit 2
#   bench_setup WHY_ROOT TOOL...      each TOOL there, root (else WHY_ROOT), $OUT, the
#                                     machine printed, latscope built (LATSCOPE)
#   run_bounded NAME SECS CMD...      run CMD bounded in time, in its own process
#                                     group (stopped on exit/Ctrl-C/SIGTERM), outputs
#                                     in $OUT/NAME.{out,err,cpu,wall}; when RUN_PROBE
#                                     names a function, it is called as
#                                     `$RUN_PROBE PGID NAME` while CMD runs
#   bench_cleanup (defined by the caller, optional)
#                                     runs on exit, Ctrl-C and SIGTERM after the
#                                     running command was stopped (scratch files)
#   disk_scratch PARENT NAME          create SCRATCH=PARENT/NAME.XXXXXX, refused on
#                                     tmpfs/ramfs (sets SCRATCH_FS); removed with all
#                                     in it on exit, Ctrl-C and SIGTERM
#   empty_scratch WHEN                remove (and name) what a run left in SCRATCH
#   print_machine REFERENCE...        the machine, and the reference tools' versions
#   build_latscope SECS               cargo build --release, sets LATSCOPE (LATSCOPE_BIN, when
#                                     set, is used instead of a build)
#   compare_run ROWS RUN TOOL NAME CMD...
#                                     run CMD --json $OUT/NAME.json, append its rows
#                                     (one per pair) to ROWS
#   report_results ROWS REF           per run and pair table, `times` CPU table
#   report_goals ROWS REF [CPUFILE]   verdict per goal (avg, min, CPU per sample)
#   taskclock_run NAME RUN TOOL CMD.. CMD --json F under perf stat -e task-clock; appends
#                                     "TOOL RUN ms samples" to $OUT/NAME.taskclock
#   json_samples FILE                 the samples in a latscope, rt-tests pair or
#                                     cyclictest JSON file
#   taskclock_summary FILE REF        all runs: us per sample and the ratio
#   find_rt_pid PGID                  the process of group PGID with a real-time thread
#                                     (SCHED_FIFO, SCHED_RR or SCHED_DEADLINE)
#   snapshot PID                      every thread's policy and schedstat, and the
#                                     /proc/stat line of CPU $CPU (of all CPUs when empty)
#   probe_threads PGID NAME           (a RUN_PROBE) two snapshots, PROBE_START s into the
#                                     run and PROBE_LEN s later, in $OUT/NAME.probe
#   median_pair_diff ROWS KEY COL     rows "KEY variant pair ...": the median over the
#                                     pairs of (with - without) of column COL
#   bpf_stats on|off                  kernel.bpf_stats_enabled (put back as it was on exit)
#   programs_snapshot FILE [PGID]     `bpftool prog show -j` into FILE (with its time in FILE.t),
#                                     only the programs of process group PGID when given
#   snapshot_programs PGID NAME       (a RUN_PROBE) programs_snapshot 1 s in and 1 s before the
#                                     end of a $SECS s run: $OUT/NAME.before.json, .after.json
#   program_costs BEFORE AFTER CPUS [RUNS_ONLY]
#                                     per latscope_ program between two snapshots: runs,
#                                     ns per run, runs per second per CPU, % of each CPU
#   timer_spinner CPU SECONDS         a bounded SCHED_FIFO 95 spinner on CPU: 2 ms every
#                                     100 ms (python3), in the background; its pid in SPINNER
#
# Rows (tab separated): run tool pair samples min_us avg_us max_us avg_int cpu_s wall_s
# (avg_int: the reference tool's own rounded Avg; "-" for latscope).

set -uo pipefail
set -m   # every background job gets its own process group: we can stop it whole

die() { echo "error: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found${2:+ ($2)}"; }

bench_out_dir() {
  if [ -z "${OUT:-}" ]; then
    OUT=$(mktemp -d /tmp/latscope-bench.XXXXXX) || die "mktemp failed"
  else
    mkdir -p "$OUT" || die "cannot create $OUT"
  fi
}

# parse_options SPEC ARGS...: a script's options, by a table of one option
# a line:
#   --runs RUNS a number    takes a value: RUNS=value ("--runs needs a number"
#                           and exit 2 when it has none)
#   --memory MEMORY=1       a flag: MEMORY=1
# -h/--help prints the usage; anything else: "unknown option: X" and the
# usage on stderr, exit 2.
parse_options() {
  local spec=$1 opt var what matched
  shift
  while [ $# -gt 0 ]; do
    case $1 in -h|--help) usage 0 ;; esac
    matched=""
    while read -r opt var what; do
      [ -n "$opt" ] && [ "$opt" = "$1" ] || continue
      matched=$var
      break
    done <<<"$spec"
    case $matched in
      "") echo "unknown option: $1" >&2; usage 2 >&2 ;;
      *=*) printf -v "${matched%%=*}" '%s' "${matched#*=}" ;;
      *)
        [ -n "${2:-}" ] || { echo "$1 needs $what" >&2; exit 2; }
        printf -v "$matched" '%s' "$2"
        shift ;;
    esac
    shift
  done
}

# bench_options NAMES ARGS...: parse_options for the options most scripts
# share, those of NAMES ("pairs seconds cpu out").
bench_options() {
  local names=$1 name spec=""
  shift
  for name in $names; do
    case $name in
      pairs) spec+="--pairs PAIRS a number" ;;
      seconds) spec+="--seconds SECS a number" ;;
      cpu) spec+="--cpu CPU a CPU number" ;;
      threshold) spec+="--threshold THRESHOLD microseconds" ;;
      tests) spec+="--tests TESTS a list" ;;
      collectors) spec+="--collectors COLLECTORS a list" ;;
      out) spec+="--out OUT a directory" ;;
    esac
    spec+=$'\n'
  done
  parse_options "$spec" "$@"
}

# whole_numbers WHAT VALUE...: "WHAT take whole numbers" and exit 2 unless
# every VALUE is one.
whole_numbers() {
  local what=$1 value
  shift
  for value in "$@"; do
    case $value in *[!0-9]*) echo "$what take whole numbers" >&2; exit 2 ;; esac
  done
}

bench_setup() {
  local why=$1 tool
  shift
  for tool in "$@"; do need "$tool" "apt-get install $tool"; done
  [ "$(id -u)" = 0 ] || die "$why"
  bench_out_dir
  print_machine
  build_latscope 900
}

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
# The caller's bench_cleanup, if it defines one, runs once the command is stopped.
on_exit() {
  stop_current
  bpf_stats_restore
  if declare -F bench_cleanup >/dev/null; then bench_cleanup; fi
  remove_scratch
}
trap on_exit EXIT
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
# If RUN_PROBE is set (e.g. `RUN_PROBE=my_probe run_bounded ...`), the function
# it names runs in this shell while CMD runs, as `$RUN_PROBE PGID NAME` (PGID:
# the process group of CMD); it must return before CMD is over to be useful,
# and CMD's time bound still holds (the wait starts when the probe returns, but
# `timeout` bounds CMD itself).
# The CPU time counts only processes that were waited for: children that a
# tool forks and never reaps (the rt-tests tools' -f children) are missing.
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
  if [ -n "${RUN_PROBE:-}" ]; then "$RUN_PROBE" "$CURRENT_JOB" "$name"; fi
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

# ---------------------------------------------------------------- scratch directory
SCRATCH=""

# disk_scratch PARENT NAME: a fresh directory PARENT/NAME.XXXXXX in SCRATCH,
# for the test files of disk benchmarks; its filesystem type in SCRATCH_FS.
# tmpfs and ramfs are refused: the page cache is not a disk. The exit trap
# removes it with everything in it (a tool stopped by Ctrl-C may leave files).
disk_scratch() {
  local parent=$1 name=$2
  [ -d "$parent" ] || die "$parent is not a directory"
  # The last line: where mounts are stacked (/dev/shm here lists tmpfs twice),
  # the one mounted last is the one the path reaches.
  SCRATCH_FS=$({ findmnt -n -o FSTYPE --target "$parent" 2>/dev/null || stat -f -c %T "$parent"; } | tail -n 1)
  [ -n "$SCRATCH_FS" ] || die "cannot find the filesystem of $parent"
  case "$SCRATCH_FS" in tmpfs|ramfs) die "$parent is on $SCRATCH_FS: give a directory on a disk" ;; esac
  show mktemp -d "$parent/$name.XXXXXX"
  SCRATCH=$(mktemp -d "$parent/$name.XXXXXX") || die "cannot create a directory in $parent"
}

remove_scratch() {
  if [ -z "${SCRATCH:-}" ] || [ ! -d "$SCRATCH" ]; then return 0; fi
  show rm -rf -- "$SCRATCH"
  rm -rf -- "$SCRATCH"
}

# empty_scratch WHEN: the scratch directory must be empty between runs; a tool
# that was stopped may have left its files: say so and remove them.
empty_scratch() {
  local left
  left=$(find "$SCRATCH" -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null)
  [ -z "$left" ] && return 0
  echo "  !! files left in $SCRATCH $1: $left(removed)" >&2
  find "$SCRATCH" -mindepth 1 -delete
}

# ---------------------------------------------------------------- machine, build
print_machine() {
  echo "== machine"
  echo "nproc: $(nproc)   kernel: $(uname -r)   clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
  local virt hv rev t
  virt=$(systemd-detect-virt 2>/dev/null || true)
  grep -q '^flags.* hypervisor' /proc/cpuinfo && hv="yes" || hv="no"
  echo "virtualization: systemd-detect-virt=${virt:-n/a}, cpuinfo hypervisor flag=$hv   load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  for t in "$@"; do echo "$(basename "$t"): $("$t" --help 2>&1 | head -1)"; done
  echo "output directory: $OUT"
  # The build takes the working tree as it is: say which state was measured.
  rev=$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo "not a git checkout")
  echo "latscope source: $rev$(git -C "$REPO" status --porcelain -- src Cargo.toml Cargo.lock 2>/dev/null | awk 'NR==1 {printf " (uncommitted changes:"} {printf " %s", $2} END {if (NR) printf ")"}')"
  echo
}

build_latscope() {
  echo "== build"
  if [ -n "${LATSCOPE_BIN:-}" ]; then
    # A binary built before (e.g. while the tree is being edited): said so.
    LATSCOPE=$LATSCOPE_BIN
    [ -x "$LATSCOPE" ] || die "LATSCOPE_BIN=$LATSCOPE is not an executable"
    echo "not built: LATSCOPE_BIN=$LATSCOPE"
    echo
    return
  fi
  run_bounded build "$1" cargo build --release --manifest-path "$REPO/Cargo.toml" \
    || die "build failed (see $OUT/build.err)"
  LATSCOPE="${CARGO_TARGET_DIR:-$REPO/target}/release/latscope"
  [ -x "$LATSCOPE" ] || die "$LATSCOPE missing after the build"
  echo
}

# ---------------------------------------------------------------- rows
cpu_of() { awk '{ print $1 + $2 }' "$OUT/$1.cpu"; }

# latscope: its JSON, tests[0].series[i] (exact ns).
latscope_rows() {
  local run=$1 name=$2
  jq -r --arg run "$run" --arg cpu "$(cpu_of "$name")" --arg wall "$(cat "$OUT/$name.wall")" '
    .tests[0].series | to_entries[] |
    [$run, "latscope", (.key|tostring), (.value.samples|tostring),
     (.value.min_ns/1000|tostring), (.value.avg_ns/1000|tostring),
     (.value.max_ns/1000|tostring), "-", $cpu, $wall] | @tsv' "$OUT/$name.json" \
    || { echo "  !! cannot parse $OUT/$name.json" >&2; return 1; }
}

# rt-tests (pmqtest, sigwaittest, svsematest, ptsematest): min, max and the
# rounded Avg from the -q final lines ("#1 -> #0, Min 1, Cur 2, Avg 2, Max 70",
# pair = #0 / 2), the 2-decimal avg and the samples from the JSON.
rttests_rows() {
  local run=$1 name=$2 tool=$3
  awk '/^#[0-9]+ -> #[0-9]+, Min/ {
         gsub(/[#,]/, ""); print $3/2, $5, $9, $11 }' "$OUT/$name.out" >"$OUT/$name.lines"
  jq -r '.thread | to_entries[] |
    [.key, .value.sender.samples, .value.receiver.avg] | @tsv' "$OUT/$name.json" \
    >"$OUT/$name.jsonrows" || { echo "  !! cannot parse $OUT/$name.json" >&2; return 1; }
  awk -v run="$run" -v tool="$tool" -v cpu="$(cpu_of "$name")" -v wall="$(cat "$OUT/$name.wall")" '
    NR == FNR { min[$1] = $2; avgint[$1] = $3; max[$1] = $4; next }
    { p = $1; printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
        run, tool, p, $2, (p in min ? min[p] : "?"), $3, (p in max ? max[p] : "?"),
        (p in avgint ? avgint[p] : "?"), cpu, wall }' \
    "$OUT/$name.lines" "$OUT/$name.jsonrows"
}

# compare_run ROWS RUN TOOL NAME CMD...: runs `CMD... --json $OUT/NAME.json`
# under run_bounded ($RUN_TIMEOUT) and appends its rows to ROWS (TOOL
# "latscope": latscope's JSON; any other name: rt-tests' lines and JSON).
compare_run() {
  local rows=$1 run=$2 tool=$3 name=$4
  shift 4
  run_bounded "$name" "$RUN_TIMEOUT" "$@" --json "$OUT/$name.json" || return 1
  if [ "$tool" = latscope ]; then
    latscope_rows "$run" "$name" >>"$rows"
  else
    rttests_rows "$run" "$name" "$tool" >>"$rows"
  fi
}

# ---------------------------------------------------------------- reports
report_results() {
  local rows=$1 ref=$2
  echo "== results (microseconds; latscope from JSON ns/1000, $ref min/max from its final lines, avg from its JSON; $ref's integer Avg in brackets)"
  awk -F'\t' -v ref="$ref" '
    { key = $1 SUBSEP $3
      n[$2, key] = $4; mn[$2, key] = $5; av[$2, key] = $6; mx[$2, key] = $7; ai[$2, key] = $8
      if (!(($1, $3) in seen)) { seen[$1, $3] = 1; order[++k] = key }
      cpu[$2, $1] = $9; wall[$2, $1] = $10; runs[$1] = 1
      tot[$2, $1] += $4 }
    END {
      printf "%-4s %-4s | %-29s | %-36s | %s\n", "run", "pair",
        "latscope samples min/avg/max", ref " samples min/avg[int]/max", "avg ratio L/R"
      for (i = 1; i <= k; i++) {
        split(order[i], a, SUBSEP); key = order[i]
        l = ("latscope" SUBSEP key) in n; p = (ref SUBSEP key) in n
        ls = l ? sprintf("%6d %5.2f/%5.2f/%6.1f", n["latscope", key], mn["latscope", key], av["latscope", key], mx["latscope", key]) : "(no data)"
        ps = p ? sprintf("%6d %3d/%5.2f[%d]/%4d", n[ref, key], mn[ref, key], av[ref, key], ai[ref, key], mx[ref, key]) : "(no data)"
        r = (l && p && av[ref, key] > 0) ? sprintf("%.2f", av["latscope", key] / av[ref, key]) : "-"
        printf "%-4s %-4s | %-29s | %-36s | %s\n", a[1], a[2], ls, ps, r
      }
      print ""
      print "CPU time (user+system, bash times) per sample, all pairs:"
      printf "%-4s | %-40s | %-40s\n", "run", "latscope cpu_s/samples = us/sample (wall)", ref " cpu_s/samples = us/sample (wall)"
      for (r in runs) rl[++nr] = r
      for (i = 1; i <= nr; i++) for (j = i + 1; j <= nr; j++) if (rl[j] + 0 < rl[i] + 0) { t = rl[i]; rl[i] = rl[j]; rl[j] = t }
      for (i = 1; i <= nr; i++) {
        r = rl[i]; line = sprintf("%-4s", r)
        for (t = 1; t <= 2; t++) {
          tool = (t == 1 ? "latscope" : ref)
          if ((tool SUBSEP r) in tot && tot[tool, r] > 0) {
            line = line sprintf(" | %6.3f s / %6d = %6.2f us (%5.1f s)%5s", cpu[tool, r], tot[tool, r], cpu[tool, r] * 1e6 / tot[tool, r], wall[tool, r], "")
            sc[tool] += cpu[tool, r]; ss[tool] += tot[tool, r]
          } else line = line sprintf(" | %-40s", "(no data)")
        }
        print line
      }
      for (t = 1; t <= 2; t++) { tool = (t == 1 ? "latscope" : ref)
        if (ss[tool] > 0) printf "%-8s all runs: %.3f s / %d samples = %.2f us per sample\n", tool, sc[tool], ss[tool], sc[tool] * 1e6 / ss[tool] }
    }' "$rows"
  echo
}

# Per pair over all runs: avg = sample-weighted mean, min = lowest. CPU: from
# CPUFILE (taskclock lines "tool run ms samples") when given and non-empty,
# else from the `times` columns of the rows.
report_goals() {
  local rows=$1 ref=$2 cpufile=${3:-}
  echo "== goals, latscope vs $ref (per pair over all runs: avg = sample-weighted mean, min = lowest)"
  awk -F'\t' -v ref="$ref" '
    { w[$2, $3] += $4; s[$2, $3] += $4 * $6; pairs[$3] = 1
      if (!(($2, $3) in m) || $5 < m[$2, $3]) m[$2, $3] = $5 }
    END {
      for (p in pairs) {
        if (!(("latscope" SUBSEP p) in w) || !((ref SUBSEP p) in w)) { print "pair " p ": missing data"; continue }
        la = s["latscope", p] / w["latscope", p]; pa = s[ref, p] / w[ref, p]
        d = la - pa; ad = d < 0 ? -d : d
        ok = (ad <= 0.15 * pa || ad <= 0.5) ? "MET" : "NOT MET"
        printf "pair %s avg: latscope %.2f us, %s %.2f us, ratio %.2f, difference %+.2f us -> %s (goal: within 15%% or 0.5 us)\n", p, la, ref, pa, la / pa, d, ok
        lm = m["latscope", p]; pm = m[ref, p]
        printf "pair %s min: latscope %.2f us, %s %d us -> %s (goal: no higher); at %s'"'"'s 1 us resolution (latscope truncated to %d us): %s\n", p, lm, ref, pm, (lm <= pm ? "MET" : "NOT MET"), ref, int(lm), (int(lm) <= pm ? "MET" : "NOT MET")
      }
    }' "$rows" | sort
  if [ -n "$cpufile" ] && [ -s "$cpufile" ]; then
    awk -v ref="$ref" '{ ms[$1] += $3; n[$1] += $4 }
      END { if (n["latscope"] > 0 && n[ref] > 0) {
        l = ms["latscope"] * 1000 / n["latscope"]; p = ms[ref] * 1000 / n[ref]
        printf "CPU per sample (perf task-clock): latscope %.2f us, %s %.2f us, ratio %.2f -> %s (goal: no higher)\n",
          l, ref, p, l / p, (l <= p ? "MET" : "NOT MET") } }' "$cpufile"
  else
    awk -F'\t' -v ref="$ref" '
      { if (!(($2, $1) in c)) { c[$2, $1] = $9; cs[$2] += $9 }; tot[$2] += $4 }
      END { if (tot["latscope"] > 0 && tot[ref] > 0) {
        lc = cs["latscope"] * 1e6 / tot["latscope"]; pc = cs[ref] * 1e6 / tot[ref]
        printf "CPU per sample (bash times): latscope %.2f us, %s %.2f us, ratio %.2f -> %s (goal: no higher)\n",
          lc, ref, pc, lc / pc, (lc <= pc ? "MET" : "NOT MET") } }' "$rows"
  fi
  echo
}

# ---------------------------------------------------------------- CPU, precise
# `times` is tick-sampled on this kind of VM and varies by +-10 % from run to
# run, and misses children a tool does not reap; perf's task-clock is the
# scheduler's exact run time of the command and all its descendants.
have_perf() { command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; }

# json_samples FILE: the samples of all threads or pairs in FILE, a latscope
# report (tests[0].series[].samples), an rt-tests pair tool's JSON
# (thread."N".sender.samples) or cyclictest's (thread."N".cycles).
json_samples() {
  jq 'if .tests then [.tests[0].series[].samples] | add
      else [.thread[] | (.sender.samples // .cycles)] | add end' "$1"
}

# taskclock_run NAME RUN TOOL CMD...: runs `perf stat -e task-clock CMD... --json
# FILE` (latscope and the rt-tests tools all take --json); the samples come from
# that JSON (json_samples). TOOL is a label.
taskclock_run() {
  local name=$1 run=$2 tool=$3
  shift 3
  local base="$name-tc-$tool-$run" ms samples
  run_bounded "$base" "$RUN_TIMEOUT" perf stat -x, -e task-clock -o "$OUT/$base.perf" \
    "$@" --json "$OUT/$base.json" || return 1
  ms=$(awk -F, '/task-clock/ {print $1}' "$OUT/$base.perf")
  samples=$(json_samples "$OUT/$base.json")
  echo "$tool $run $ms $samples" >>"$OUT/$name.taskclock"
  awk -v t="$tool" -v r="$run" -v ms="$ms" -v n="$samples" \
    'BEGIN { printf "  %-11s run %d: %8.1f ms / %6d samples = %5.2f us per sample\n", t, r, ms, n, ms * 1000 / n }'
}

taskclock_summary() {
  local file=$1 ref=$2
  [ -s "$file" ] || return 0
  awk -v ref="$ref" '{ ms[$1] += $3; n[$1] += $4 }
    END {
      if (n["latscope"] > 0 && n[ref] > 0) {
        l = ms["latscope"] * 1000 / n["latscope"]; p = ms[ref] * 1000 / n[ref]
        printf "  all runs: latscope %.2f us, %s %.2f us per sample, ratio %.2f -> %s (goal: no higher)\n",
          l, ref, p, l / p, (l <= p ? "MET" : "NOT MET")
      }
    }' "$file"
}

# ---------------------------------------------------------------- thread probe
# (These functions run through run_bounded's RUN_PROBE.)
# shellcheck disable=SC2317
# The process of group PGID that has a SCHED_FIFO or SCHED_RR thread (field 41
# of /proc/PID/task/TID/stat, i.e. the 39th after the command name).
find_rt_pid() {
  local pgid=$1 pid t rest f
  for pid in $(ps -e -o pid=,pgid= | awk -v g="$pgid" '$2 == g { print $1 }'); do
    for t in /proc/"$pid"/task/*; do
      read -r rest 2>/dev/null <"$t/stat" || continue
      read -r -a f <<<"${rest##*) }"
      case "${f[38]:-}" in 1|2|6) echo "$pid"; return 0 ;; esac
    done
  done
  return 1
}

# snapshot PID: "t TIME", one "task TID COMM POLICY RUN_NS WAIT_NS SWITCH_INS"
# line per thread, the /proc/stat line of CPU $CPU (all CPUs: CPU empty), "t TIME". Shell built-ins only.
# shellcheck disable=SC2317
snapshot() {
  local pid=$1 t rest f comm run wait pc line
  echo "t $EPOCHREALTIME"
  for t in /proc/"$pid"/task/*; do
    { read -r rest <"$t/stat" && read -r comm <"$t/comm" && read -r run wait pc <"$t/schedstat"; } 2>/dev/null || continue
    read -r -a f <<<"${rest##*) }"
    echo "task ${t##*/} ${comm// /_} ${f[38]} $run $wait $pc"
  done
  while read -r line; do
    case "$line" in "cpu$CPU "*) echo "$line"; break ;; esac
  done </proc/stat
  echo "t $EPOCHREALTIME"
}

# probe_threads PGID NAME (the RUN_PROBE of run_bounded): two snapshots of the
# real-time process, PROBE_LEN seconds apart (after PROBE_START s), in $OUT/NAME.probe.
# shellcheck disable=SC2317
probe_threads() {
  local pgid=$1 name=$2 pid="" _
  sleep "$PROBE_START"
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    pid=$(find_rt_pid "$pgid") && break
    sleep 0.2
  done
  if [ -z "$pid" ]; then
    echo "  !! no real-time thread found in the run's processes: no thread CPU figures" >&2
    : >"$OUT/$name.probe"
    return 0
  fi
  { snapshot "$pid"; sleep "$PROBE_LEN"; snapshot "$pid"; } >"$OUT/$name.probe"
}

# median_pair_diff ROWS KEY COL: ROWS is tab separated with column 1 a key
# (test or collector), column 2 "with" or "without", column 3 the pair number.
# Prints the median over the complete pairs of KEY of (with - without) of
# column COL, and the number of pairs, as "+1.23 8"; "- 0" when none.
# The median of per-pair differences, not the difference of means: a pair's
# two runs share the machine's state of the moment, and one noisy pair moves a
# mean but not a median.
median_pair_diff() {
  awk -F'\t' -v k="$2" -v col="$3" '
    $1 == k { v[$2" "$3] = $col; pairs[$3] = 1 }
    END { for (p in pairs) if ((("with " p) in v) && (("without " p) in v)) print v["with " p] - v["without " p] }' "$1" |
    sort -g | awk '
      { d[NR] = $1 }
      END {
        if (NR == 0) { print "- 0"; exit }
        m = (NR % 2) ? d[(NR + 1) / 2] : (d[NR / 2] + d[NR / 2 + 1]) / 2
        printf "%+.2f %d\n", m, NR
      }'
}

# median_diffs ROWS KEY WIDTH COLUMNS: median_pair_diff of KEY for each
# NAME:COLUMN of COLUMNS ("avg:5 p50:8 p99:6"), one line each:
# "KEY NAME: +1.23 (8 pairs)", KEY padded to WIDTH.
median_diffs() {
  local rows=$1 key=$2 width=$3 what diff n
  for what in $4; do
    read -r diff n < <(median_pair_diff "$rows" "$key" "${what#*:}")
    printf '%-*s %s: %s (%s pairs)\n' "$width" "$key" "${what%%:*}" "$diff" "$n"
  done
}

# ---------------------------------------------------------------- BPF programs
# kernel.bpf_stats_enabled=1 makes the kernel count run_cnt and run_time_ns
# of every program (about 20 ns per run); put back as it was on exit.
BPF_STATS_BEFORE=""
bpf_stats() {
  [ -n "$BPF_STATS_BEFORE" ] || BPF_STATS_BEFORE=$(sysctl -n kernel.bpf_stats_enabled)
  sysctl -q -w kernel.bpf_stats_enabled="$([ "$1" = on ] && echo 1 || echo 0)"
}
bpf_stats_restore() {
  [ -z "$BPF_STATS_BEFORE" ] || sysctl -q -w kernel.bpf_stats_enabled="$BPF_STATS_BEFORE"
}

# programs_snapshot FILE [PGID]: only the programs of the processes of
# process group PGID when given (other latscope runs may hold programs too).
# (A bpftool built without its pid iterator lists no `pids`: then every
# program is kept, and program_costs keeps the latscope_ ones.)
programs_snapshot() {
  local pids="[]"
  [ -z "${2:-}" ] || pids=$(pgrep -g "$2" | jq -s -c .)
  bpftool prog show -j 2>/dev/null |
    jq -c --argjson pids "$pids" '[.[] | select(($pids | length) == 0
      or .pids == null
      or (.pids | any(.pid as $p | $pids | index($p) != null)))]' >"$1" ||
    echo "[]" >"$1"
  date +%s.%N >"$1.t"
}

# The latscope_ programs of latscope processes between two snapshots: runs,
# ns per run, runs per second per CPU over CPUS CPUs, and the share of each
# CPU they take. Programs loaded after BEFORE count from zero.
program_costs() {
  local before=$1 after=$2 cpus=$3 secs
  secs=$(awk '{ t = $1 } END { print t }' "$after.t")
  secs=$(awk -v a="$(cat "$before.t")" -v b="$secs" 'BEGIN { print b - a }')
  jq -r -n --slurpfile a "$before" --slurpfile b "$after" --argjson s "$secs" --argjson c "$cpus" '
    def ours: .[] | select(.name | startswith("latscope_"))
      | select((.pids // [{comm: "latscope"}]) | any(.comm == "latscope"));
    ([$a[0] | ours | {key: (.id | tostring), value: .}] | from_entries) as $was |
    $b[0] | ours | . as $p | ($was[$p.id | tostring] // {}) as $q |
    (($p.run_cnt // 0) - ($q.run_cnt // 0)) as $n |
    (($p.run_time_ns // 0) - ($q.run_time_ns // 0)) as $t |
    [$p.name, $n, (if $n > 0 then $t / $n else 0 end), ($n / $s / $c), ($t / $s / $c / 1e7)] | @tsv' |
    { printf 'program\truns\tns_per_run\truns_per_s_per_cpu\tpercent_of_each_cpu\n'
      awk -F'\t' '{ printf "%s\t%d\t%.1f\t%.0f\t%.3f\n", $1, $2, $3, $4, $5 }'; } |
    column -t -s $'\t'
}

# snapshot_programs PGID NAME (a RUN_PROBE): programs_snapshot of the run's
# programs 1 s in ($OUT/NAME.before.json) and 1 s before its end of $SECS
# seconds ($OUT/NAME.after.json), for program_costs.
snapshot_programs() {
  sleep 1
  programs_snapshot "$OUT/$2.before.json" "$1"
  sleep $((SECS - 2 > 0 ? SECS - 2 : 1))
  programs_snapshot "$OUT/$2.after.json" "$1"
}

SPINNER=""
timer_spinner() {
  python3 -c '
import os, sys, time
cpu, seconds = int(sys.argv[1]), float(sys.argv[2])
os.sched_setaffinity(0, {cpu})
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(95))
end = time.monotonic() + seconds
while time.monotonic() < end:
    until = time.monotonic() + 0.002
    while time.monotonic() < until:
        pass
    time.sleep(0.098)
' "$1" "$2" &
  SPINNER=$!
}

# The calling script's header comment (its usage), then exit with code $1
# (on stderr when that is not 0: bad usage).
usage() {
  if [ "${1:-0}" = 0 ]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  else
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  fi
  exit "${1:-0}"
}

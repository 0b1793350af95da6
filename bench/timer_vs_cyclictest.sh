#!/usr/bin/env bash
# Compare `latscope timer` with rt-tests' cyclictest on one CPU, and measure
# what `latscope timer --breakdown` costs.
#
#   bench/timer_vs_cyclictest.sh [--runs N] [--seconds S] [--cpu C]
#                                [--only LIST] [--no-breakdown]
#                                [--phases LIST] [--wait-quiet SECS] [--out DIR]
#
# 1. Builds latscope in release mode (cargo build --release).
# 2. Runs these commands one after the other, N times each (default 3): run 1
#    of every command, then run 2, and so on, so that slow drifts of the
#    machine's load spread over all of them (C = --cpu, default 1; S =
#    --seconds, default 10; L = S * 10000, the samples of S seconds at 100 us;
#    `--json FILE` is appended to each):
#      timer          latscope timer -c C -p 100 -P 99 -T S -q
#      cyclictest     cyclictest -m -p99 -i100 -a C -t1 -l L -q
#      timerfd        latscope timer --timerfd -c C -p 100 -P 99 -T S -q
#      cyclictest-ns  cyclictest -m -p99 -i100 -a C -t1 -l L -q -N
#      timer-w0       latscope timer -c C -p 100 -P 99 -T S --warmup 0 -q
#    --only takes a comma list of these names (in this order whatever the list).
# 3. If perf is installed (Debian package linux-perf): the same commands again,
#    N runs each, alternating, under `perf stat -e task-clock`, for the CPU time
#    per sample of the whole process.
# 4. Unless --no-breakdown: `latscope timer -c C -p 100 -P 99 -T S -q` without
#    and with `--breakdown`, alternating, N runs each, then both again under
#    perf (if installed): what the kernel trace costs in latency and CPU time.
#    --phases takes a comma list of latency (2.), cpu (3.) and breakdown (4.),
#    default all three; the reports use the files in the output directory, so
#    `--phases cpu,breakdown --out DIR` redoes those two phases and reports
#    them with DIR's earlier latency runs (e.g. after a disturbed phase).
# 5. Prints per run: samples, overruns, min/avg/p99/max (us), the sampling
#    thread's CPU time per wake-up and how busy CPU C was with other work; then
#    per command over all runs, and the verdict per goal (avg within 15 % or
#    1 us of cyclictest's, min no higher, CPU time per sample no higher).
#    Runs during which CPU C was more than 10 % busy with work other than the
#    sampling thread (other load on a shared machine; the timer interrupts
#    alone take about 3 %) are flagged "(!)", and the summary and verdicts are
#    printed a second time over the unflagged runs only. Rerun (or raise
#    --runs) when too few are left. With --wait-quiet SECS, each run first
#    waits (at most SECS seconds, checking every 2 s) until CPU C has been at
#    most 5 % busy for one second; that favours no tool (every run waits the
#    same way) but only lowers the chance of other load, it does not stop it.
#
# What makes the comparison fair:
#   Both tools: one thread pinned to CPU C, SCHED_FIFO 99, absolute
#   CLOCK_MONOTONIC expiries every 100 us (clock_nanosleep TIMER_ABSTIME;
#   timerfd for `timerfd`), memory locked (cyclictest -m; latscope locks by
#   default), /dev/cpu_dma_latency held at 0 (both by default: cyclictest
#   unless --laptop or --latency, latscope unless --no-dma-latency; both print
#   or record it), main thread left unpinned at normal priority (cyclictest
#   polls every 10 ms with -q, latscope every 100 ms).
#   Samples: cyclictest -l L takes L samples from its first wake-up (one period
#   after it starts). latscope -T S takes every expiry of S seconds after its
#   warm-up (default one 1 s loop, discarded): L samples when no period is
#   missed, samples + overruns = L otherwise. cyclictest skips missed periods
#   silently, so with misses it runs longer for the same L. `timer-w0`
#   (--warmup 0) counts from the first wake-up, as cyclictest does.
#   Units: latscope reports exact signed ns (JSON tests[0].series[0]), shown
#   here / 1000. cyclictest stores, without -N, each sample as the difference
#   of the two timespecs in whole us, truncated (the ns part / 1000), so every
#   sample is up to 1 us low and its avg about 0.5 us low; its JSON
#   thread."0".{min,avg,max,cycles} (avg with 2 decimals) are read as they
#   are. With -N (`cyclictest-ns`) it keeps ns and measures the same way:
#   that is the exact like-for-like figure. cyclictest prints no percentile
#   without -h (a histogram, which changes its output), so no p99 for it.
#
# CPU time per sample, two ways:
#   Sampling thread: /proc/PID/task/TID/schedstat (the scheduler's exact run
#     time of the thread in ns, sum_exec_runtime, the figure getrusage and
#     CLOCK_THREAD_CPUTIME_ID report too, and how many times it was switched
#     in), read by this script twice while the command runs: 1.5 s after the
#     start and S - 3 s later (at least 0.5 s). Run time / switch-ins is the
#     thread's CPU time per wake-up, i.e. per sample, in the steady state: no
#     set-up, no main thread, no warm-up. The same window gives how busy CPU C
#     was (from /proc/stat: 1 - idle time / window; idle time is exact with
#     the tickless idle accounting, the user/system ticks are not used) and the
#     periods in which the thread was not switched in (window / 100 us -
#     switch-ins; about +-10 from the timing of the reads): missed periods
#     (overruns, which cyclictest does not report) plus samples taken without
#     sleeping (the previous wake-up ended after this expiry), the same
#     measure for both tools. The probe costs a few short /proc reads per
#     run, from this shell, unpinned.
#   Whole process: perf stat -e task-clock (all threads, set-up, warm-up and
#     exit included) in separate runs, divided by the samples reported, and
#     by the wake-ups (samples + latscope's warm-up periods: its warm-up second
#     costs CPU time but gives no samples). The same probe flags these runs.
#   The two differ by more than the main thread: sum_exec_runtime counts from
#   the moment the scheduler picks the thread, the context switch into it
#   included; perf's task-clock starts after that switch. Neither counts the
#   timer interrupt, which the kernel runs on the idle CPU before the thread
#   wakes: it is in "CPU C busy" instead.
#
# Needs root (SCHED_FIFO 99, mlockall; --breakdown also tracefs), cyclictest
# (Debian package rt-tests), jq, awk, cargo, ps; perf (Debian linux-perf) for
# the whole-process CPU time.
#
# Bounded in time: every command runs under `timeout` (the build 900 s, each
# run 3 S + 30 s), and on exit, Ctrl-C or SIGTERM the running command's whole
# process group is stopped, so nothing is left behind. Every command is
# printed (prefixed with "+") before it runs. Raw outputs (the tools' output,
# JSON, perf and probe files) are kept in the output directory (printed at the
# end). About 8 min with the defaults (5 commands x 3 runs x 11 s, twice, and
# 2 x 3 x 11 s, twice, for the breakdown). Shared functions: bench/lib.sh.

RTBIN=${RTBIN:-/usr/bin}
RUNS=3
SECS=10
CPU=""
ONLY="timer,cyclictest,timerfd,cyclictest-ns,timer-w0"
PHASES="latency,cpu,breakdown"
WAIT_QUIET=0
NO_BREAKDOWN=0
OUT=""
BUILD_TIMEOUT=900
PERIOD_US=100
OTHER_MAX=10     # % of CPU C busy with other work above which a run is flagged
ORDER="timer cyclictest timerfd cyclictest-ns timer-w0"

REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"

parse_options "
--runs RUNS a number
--seconds SECS a number
--cpu CPU a CPU number
--only ONLY a list
--no-breakdown NO_BREAKDOWN=1
--phases PHASES a list
--wait-quiet WAIT_QUIET seconds
--out OUT a directory
" "$@"
if [ "$NO_BREAKDOWN" = 1 ]; then PHASES=${PHASES//breakdown/}; fi
whole_numbers "--runs, --seconds, --cpu and --wait-quiet" "$RUNS" "$SECS" "$CPU" "$WAIT_QUIET"
if [ "$RUNS" -lt 1 ] || [ "$SECS" -lt 2 ]; then
  echo "--runs must be at least 1, --seconds at least 2" >&2; exit 2
fi
if [ -z "$CPU" ]; then
  if [ "$(nproc)" -gt 1 ]; then CPU=1; else CPU=0; fi
fi
[ -d "/sys/devices/system/cpu/cpu$CPU" ] || die "--cpu $CPU: no such CPU"
COMPARISONS=()
for c in $ORDER; do [[ ",$ONLY," == *",$c,"* ]] && COMPARISONS+=("$c"); done
IFS=, read -r -a asked <<<"$ONLY"
for c in "${asked[@]}"; do
  [[ " $ORDER " == *" $c "* ]] || die "--only: unknown command '$c' (one of: $ORDER)"
done
[ "${#COMPARISONS[@]}" -gt 0 ] || die "--only: nothing to run"
IFS=, read -r -a asked <<<"$PHASES"
for p in "${asked[@]}"; do
  case "$p" in latency|cpu|breakdown|"") ;; *) die "--phases: unknown phase '$p' (latency, cpu, breakdown)" ;; esac
done
has_phase() { [[ ",$PHASES," == *",$1,"* ]]; }

[ "$(id -u)" = 0 ] || die "run as root (SCHED_FIFO priority 99, mlockall, tracefs)"
[ -x "$RTBIN/cyclictest" ] || die "$RTBIN/cyclictest not found (apt-get install rt-tests)"
need jq "apt-get install jq"
need awk
need cargo
need ps "procps"
need timeout "coreutils"
[ -r /proc/self/schedstat ] || die "/proc/PID/schedstat missing (kernel without CONFIG_SCHED_INFO): no thread CPU time"
bench_out_dir

LOOPS=$((SECS * 1000000 / PERIOD_US))
CLK_TCK=$(getconf CLK_TCK)
RUN_TIMEOUT=$((3 * SECS + 30))
PROBE_START=1.5
PROBE_LEN=$((SECS > 3 ? SECS - 3 : 1))
[ "$SECS" -gt 3 ] || PROBE_LEN=0.5

print_machine "$RTBIN/cyclictest"
echo "cpuidle: driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo none), governor $(cat /sys/devices/system/cpu/cpuidle/current_governor 2>/dev/null || echo none)   measured CPU: $CPU   samples per run: $LOOPS ($SECS s at $PERIOD_US us)"
echo
build_latscope "$BUILD_TIMEOUT"

# command NAME: sets CMD (without --json), UNIT (what the JSON's times are in:
# 1 = us, 1000 = ns) and KIND (latscope or cyclictest).
command_of() {
  local lt=("$LATSCOPE" timer -c "$CPU" -p "$PERIOD_US" -P 99 -T "$SECS")
  local ct=("$RTBIN/cyclictest" -m -p99 -i"$PERIOD_US" -a "$CPU" -t1 -l "$LOOPS" -q)
  case "$1" in
    timer)         KIND=latscope;   UNIT=1000; CMD=("${lt[@]}" -q) ;;
    timerfd)       KIND=latscope;   UNIT=1000; CMD=("$LATSCOPE" timer --timerfd "${lt[@]:2}" -q) ;;
    timer-w0)      KIND=latscope;   UNIT=1000; CMD=("${lt[@]}" --warmup 0 -q) ;;
    breakdown)     KIND=latscope;   UNIT=1000; CMD=("${lt[@]}" --breakdown -q) ;;
    cyclictest)    KIND=cyclictest; UNIT=1;    CMD=("${ct[@]}") ;;
    cyclictest-ns) KIND=cyclictest; UNIT=1000; CMD=("${ct[@]}" -N) ;;
  esac
}

# ---------------------------------------------------------------- thread probe
# find_rt_pid, snapshot and probe_threads: bench/lib.sh.

# probe_fields NAME: "win_s thr_run_ns thr_switchins busy_pct steal_pct
# reader_run_ns other_threads_run_ns" from $OUT/NAME.probe ("-" when missing).
# The sampling thread is the process's one real-time thread; the reader is
# latscope's trace reader thread (latscope-trace).
probe_fields() {
  awk '
    $1 == "t" { nt++; if (nt % 2) t0[int(nt / 2) + 1] = $2; else tm[nt / 2] = (t0[nt / 2] + $2) / 2; next }
    $1 == "task" { s = int(nt / 2) + 1; run[s, $2] = $5; pc[s, $2] = $7; pol[$2] = $4; comm[$2] = $3; tids[$2] = 1; next }
    $1 ~ /^cpu[0-9]+$/ { s = int(nt / 2) + 1; idle[s] = $5 + $6; st[s] = $9 }
    END {
      if (nt < 4) { print "- - - - - - -"; exit }
      win = tm[2] - tm[1]; thr = "-"; tpc = "-"; reader = 0; other = 0
      for (t in tids) {
        if (!((1, t) in run) || !((2, t) in run)) continue
        d = run[2, t] - run[1, t]
        if (pol[t] == 1 || pol[t] == 2) { thr = sprintf("%.0f", d); tpc = sprintf("%.0f", pc[2, t] - pc[1, t]) }
        else if (comm[t] == "latscope-trace") reader = d
        else other += d
      }
      # /proc/stat counts in clock ticks (USER_HZ); idle is exact (tickless
      # idle accounting), steal is sampled at the scheduler tick.
      busy = win > 0 ? 100 * (1 - (idle[2] - idle[1]) / hz / win) : -1
      steal = win > 0 ? 100 * (st[2] - st[1]) / hz / win : -1
      printf "%.3f %s %s %.1f %.1f %.0f %.0f\n", win, thr, tpc, busy, steal, reader, other
    }' hz="$CLK_TCK" "$OUT/$1.probe"
}

# ---------------------------------------------------------------- one run
# cpu_busy_1s: how busy CPU C was over the next second, in % (idle time of
# /proc/stat, exact with the tickless idle accounting).
cpu_busy_1s() {
  local a b
  a=$(awk -v c="cpu$CPU" '$1 == c { print $5 + $6 }' /proc/stat)
  sleep 1
  b=$(awk -v c="cpu$CPU" '$1 == c { print $5 + $6 }' /proc/stat)
  echo $((100 - (b - a) * 100 / CLK_TCK))
}

# wait_quiet: with --wait-quiet, waits until CPU C was at most 5 % busy for a
# second, at most WAIT_QUIET seconds.
wait_quiet() {
  [ "$WAIT_QUIET" -gt 0 ] || return 0
  local start=$SECONDS busy
  while :; do
    busy=$(cpu_busy_1s)
    [ "$busy" -le 5 ] && return 0
    if [ $((SECONDS - start)) -ge "$WAIT_QUIET" ]; then
      echo "  (CPU $CPU still $busy % busy after waiting ${WAIT_QUIET} s: running anyway)"
      return 0
    fi
    sleep 2
  done
}

# row NAME RUN FILE: one tab-separated row of $ROWS_HEADER from the run's files.
ROWS_HEADER="name run samples overruns min_us avg_us p99_us max_us win_s thr_run_ns thr_switchins busy_pct steal_pct reader_run_ns other_run_ns wall_s own_warning traced incomplete irq_avg_us sched_avg_us"
row() {
  local name=$1 run=$2 base=$3 probe warn
  read -r -a probe <<<"$(probe_fields "$base")"
  if [ "$KIND" = latscope ]; then
    warn=$(cat "$OUT/$base.out" "$OUT/$base.err" | grep -o '([0-9]*% busy with other work' | tr -dc '0-9%')
    jq -r --arg name "$name" --arg run "$run" --arg probe "${probe[*]}" --arg wall "$(cat "$OUT/$base.wall")" --arg warn "${warn:--}" '
      .tests[0].series[0] as $s | ($s.detail.breakdown // null) as $b |
      [$name, $run, $s.samples, $s.overruns, $s.min_ns / 1000, $s.avg_ns / 1000,
       (($s.percentiles[] | select(.percentile == 99) | .ns) / 1000), $s.max_ns / 1000]
      + ($probe | split(" ")) + [$wall, $warn]
      + (if $b then [$b.traced_wakeups, $b.incomplete_wakeups, $b.irq.avg_ns / 1000, $b.thread.avg_ns / 1000]
         else ["-", "-", "-", "-"] end)
      | map(tostring) | @tsv' "$OUT/$base.json"
  else
    jq -r --arg name "$name" --arg run "$run" --arg probe "${probe[*]}" --arg wall "$(cat "$OUT/$base.wall")" --argjson unit "$UNIT" '
      .thread."0" as $t |
      [$name, $run, $t.cycles, "-", $t.min / $unit, $t.avg / $unit, "-", $t.max / $unit]
      + ($probe | split(" ")) + [$wall, "-", "-", "-", "-", "-"]
      | map(tostring) | @tsv' "$OUT/$base.json"
  fi
}

# timer_run ROWS NAME RUN: runs NAME's command with the thread probe, appends its row.
timer_run() {
  local rows=$1 name=$2 run=$3 base="$2-$3"
  command_of "$name"
  wait_quiet
  RUN_PROBE=probe_threads run_bounded "$base" "$RUN_TIMEOUT" "${CMD[@]}" --json "$OUT/$base.json" || return 1
  row "$name" "$run" "$base" >>"$rows" || { echo "  !! cannot read the results of $base" >&2; return 1; }
  tail -n 1 "$rows" | awk -F'\t' '{ printf "  %s run %s: %s samples, avg %.2f us, max %.1f us; CPU %s busy %s %%, sampling thread %.2f us per wake-up\n",
    $1, $2, $3, $6, $8, cpu, $12, ($11 > 0 ? $10 / $11 / 1000 : -1) }' cpu="$CPU"
}

# cpu_run NAME RUN TOOL: taskclock_run of TOOL's command, then appends
# "TOOL RUN ms samples wake-ups" to $OUT/NAME.cpu; wake-ups = samples, plus the
# warm-up periods for latscope (warm-up loops x samples per loop).
cpu_run() {
  local name=$1 run=$2 tool=$3 base="$1-tc-$3-$2" wakeups other
  command_of "$tool"
  wait_quiet
  RUN_PROBE=probe_threads taskclock_run "$name" "$run" "$tool" "${CMD[@]}" || return 1
  wakeups=$(jq 'if .tests then .tests[0] | ([.series[].samples] | add) + .config.detail.warmup_loops * .config.detail.samples_per_loop
                else [.thread[].cycles] | add end' "$OUT/$base.json") || return 1
  other=$(probe_fields "$base" | awk '$2 == "-" || $1 <= 0 { print "-"; next } { printf "%.1f\n", $4 - 100 * $2 / ($1 * 1e9) }')
  echo "$(tail -n 1 "$OUT/$name.taskclock") $wakeups $other" >>"$OUT/$name.cpu"
}

# quiet ROWS|CPUFILE: the lines of runs whose probe saw CPU C at most OTHER_MAX %
# busy with work other than the sampling thread (runs without probe data are
# left out too).
quiet() {
  case "$1" in
    *.cpu) awk -v m="$OTHER_MAX" '$6 != "-" && $6 <= m' "$1" ;;
    *) awk -F'\t' -v m="$OTHER_MAX" '$11 != "-" && $11 > 0 && $9 > 0 && $12 - 100 * $10 / ($9 * 1e9) <= m' "$1" ;;
  esac
}

# ---------------------------------------------------------------- reports
# per_run ROWS: every run as a table row.
per_run() {
  awk -F'\t' -v period="$PERIOD_US" '
    BEGIN {
      print "| Run | Command | Samples | Overruns | Min | Avg | P99 | Max | Thread CPU/wake-up | No switch-in | CPU busy (thread, other) | Steal |"
      print "|---|---|---|---|---|---|---|---|---|---|---|---|"
    }
    function f(x, d) { return x == "-" ? "-" : sprintf("%." d "f", x) }
    {
      w = ($11 != "-" && $11 > 0)
      thr = w ? sprintf("%.2f", $10 / $11 / 1000) : "-"
      missed = w ? sprintf("%d", $9 * 1e6 / period - $11) : "-"
      tp = w ? 100 * $10 / ($9 * 1e9) : 0
      busy = w ? sprintf("%.1f %% (%.1f, %.1f)", $12, tp, $12 - tp) : "-"
      if (w && $12 - tp > other_max) { busy = busy " (!)"; disturbed = disturbed " " $1 "/" $2 }
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
        $2, $1, $3, $4, f($5, 2), f($6, 2), f($7, 2), f($8, 1), thr, missed, busy, (w ? $13 " %" : "-")
    }
    END { if (disturbed != "") printf "\n(!) CPU %s was more than %d %% busy with work other than the sampling thread (other load on the machine; the timer interrupts take about 3 %%):%s\n", cpu, other_max, disturbed }' \
    cpu="$CPU" other_max="$OTHER_MAX" "$1"
  echo
}

# summary ROWS [TASKCLOCK]: per command over all runs: samples, sample-weighted
# avg, lowest min, p99 range, highest max, thread CPU per wake-up (sum of run
# time / sum of switch-ins), whole-process CPU per sample (perf).
summary() {
  awk -F'\t' -v order="$ORDER breakdown" -v period="$PERIOD_US" -v secs="$SECS" '
    FILENAME != rowsfile { split($0, a, " "); ms[a[1]] += a[3]; tn[a[1]] += a[4]; tw5[a[1]] += a[5]; next }
    {
      n[$1] += $3; s[$1] += $3 * $6
      if (!($1 in mn) || $5 < mn[$1]) mn[$1] = $5
      if (!($1 in mx) || $8 > mx[$1]) mx[$1] = $8
      if ($7 != "-") { if (!($1 in pl) || $7 < pl[$1]) pl[$1] = $7; if (!($1 in ph) || $7 > ph[$1]) ph[$1] = $7 }
      if ($4 != "-") ov[$1] += $4
      if ($11 != "-" && $11 > 0) { tr[$1] += $10; tw[$1] += $11 }
      if ($14 != "-" && $14 > 0) { rd[$1] += $14; rw[$1] += $9 }
    }
    END {
      print "| Command | Samples | Overruns | Min | Avg | P99 (range of runs) | Max | Thread CPU/wake-up | Process CPU/sample (/wake-up) |"
      print "|---|---|---|---|---|---|---|---|---|"
      k = split(order, names, " ")
      for (i = 1; i <= k; i++) {
        c = names[i]; if (!(c in n)) continue
        p99 = (c in pl) ? sprintf("%.2f-%.2f", pl[c], ph[c]) : "-"
        thr = (c in tw) ? sprintf("%.2f", tr[c] / tw[c] / 1000) : "-"
        pc = (c in tn && tn[c] > 0) ? sprintf("%.2f (%.2f)", ms[c] * 1000 / tn[c], ms[c] * 1000 / tw5[c]) : "-"
        printf "| %s | %d | %s | %.2f | %.2f | %s | %.1f | %s | %s |\n", c, n[c], (c in ov ? ov[c] : "-"), mn[c], s[c] / n[c], p99, mx[c], thr, pc
      }
      for (c in rd) printf "%s: trace reader thread %.1f ms of CPU per second (%.2f us per period)\n", c, rd[c] / rw[c] / 1e6, rd[c] / rw[c] / 1e6 * 1000 * period / 1e6
    }' rowsfile="$1" "${2:-/dev/null}" "$1"
  echo
}

# goals ROWS [TASKCLOCK]: every latscope command against every cyclictest one.
goals() {
  awk -F'\t' '
    FILENAME != rowsfile { split($0, a, " "); ms[a[1]] += a[3]; tn[a[1]] += a[4]; tw5[a[1]] += a[5]; next }
    {
      n[$1] += $3; s[$1] += $3 * $6
      if (!($1 in mn) || $5 < mn[$1]) mn[$1] = $5
      if ($11 != "-" && $11 > 0) { tr[$1] += $10; tw[$1] += $11 }
    }
    function v(ok) { return ok ? "MET" : "NOT MET" }
    END {
      split("timer timerfd timer-w0", ls, " "); split("cyclictest cyclictest-ns", rs, " ")
      for (i = 1; i <= 3; i++) for (j = 1; j <= 2; j++) {
        l = ls[i]; r = rs[j]
        if (!(l in n) || !(r in n)) continue
        la = s[l] / n[l]; ra = s[r] / n[r]; d = la - ra; ad = d < 0 ? -d : d
        printf "%s vs %s: avg %.2f vs %.2f us, ratio %.3f, difference %+.2f us -> %s (goal: within 15 %% or 1 us)\n",
          l, r, la, ra, la / ra, d, v(ad <= 0.15 * ra || ad <= 1)
        if (r == "cyclictest")
          printf "%s vs %s: min %.2f vs %d us -> %s (goal: no higher); at cyclictest'"'"'s 1 us resolution (latscope truncated to %d us): %s\n",
            l, r, mn[l], mn[r], v(mn[l] <= mn[r]), int(mn[l]), v(int(mn[l]) <= mn[r])
        else
          printf "%s vs %s: min %.3f vs %.3f us -> %s (goal: no higher)\n", l, r, mn[l], mn[r], v(mn[l] <= mn[r])
        if ((l in tw) && (r in tw)) {
          lt = tr[l] / tw[l] / 1000; rt = tr[r] / tw[r] / 1000
          printf "%s vs %s: sampling thread CPU per wake-up %.3f vs %.3f us, ratio %.3f -> %s (goal: no higher)\n", l, r, lt, rt, lt / rt, v(lt <= rt)
        }
        if ((l in tn) && (r in tn) && tn[l] > 0 && tn[r] > 0) {
          lp = ms[l] * 1000 / tn[l]; rp = ms[r] * 1000 / tn[r]
          printf "%s vs %s: whole process CPU per sample (perf) %.3f vs %.3f us, ratio %.3f -> %s (goal: no higher)\n", l, r, lp, rp, lp / rp, v(lp <= rp)
          lw = ms[l] * 1000 / tw5[l]; rw = ms[r] * 1000 / tw5[r]
          printf "%s vs %s: whole process CPU per wake-up, warm-up included (perf) %.3f vs %.3f us, ratio %.3f\n", l, r, lw, rw, lw / rw
        }
      }
    }' rowsfile="$1" "${2:-/dev/null}" "$1"
  echo
}

# breakdown_report ROWS [TASKCLOCK]: timer without and with --breakdown.
breakdown_report() {
  echo "Per run, with --breakdown: traced wake-ups, incomplete ones, IRQ and Sched (scheduled-in) avg, trace reader CPU:"
  awk -F'\t' -v period="$PERIOD_US" '$1 == "breakdown" && $9 != "-" {
    printf "  run %s: %s traced, %s incomplete, IRQ avg %.2f us, Sched avg %.2f us, User avg %.2f us; reader %.1f ms CPU over %.1f s (%.2f us per period)\n",
      $2, $18, $19, $20, $21, $6, $14 / 1e6, $9, $14 / 1e3 / ($9 * 1e6 / period) }' "$1"
  awk -F'\t' '
    FILENAME != rowsfile { split($0, a, " "); ms[a[1]] += a[3]; tn[a[1]] += a[4]; next }
    $1 == "timer" || $1 == "breakdown" { n[$1] += $3; s[$1] += $3 * $6; p[$1] += $7; pr[$1]++
      if ($11 != "-" && $11 > 0) { tr[$1] += $10; tw[$1] += $11 } }
    END {
      if (!("timer" in n) || !("breakdown" in n)) exit
      a0 = s["timer"] / n["timer"]; a1 = s["breakdown"] / n["breakdown"]
      p0 = p["timer"] / pr["timer"]; p1 = p["breakdown"] / pr["breakdown"]
      printf "avg without / with --breakdown: %.2f / %.2f us (%+.2f us, ratio %.3f)\n", a0, a1, a1 - a0, a1 / a0
      printf "p99 (mean of runs) without / with: %.2f / %.2f us (%+.2f us, ratio %.3f)\n", p0, p1, p1 - p0, p1 / p0
      if (("timer" in tw) && ("breakdown" in tw))
        printf "sampling thread CPU per wake-up without / with: %.3f / %.3f us (ratio %.3f)\n", tr["timer"] / tw["timer"] / 1000, tr["breakdown"] / tw["breakdown"] / 1000, (tr["breakdown"] / tw["breakdown"]) / (tr["timer"] / tw["timer"])
      if (tn["timer"] > 0 && tn["breakdown"] > 0)
        printf "whole process CPU per sample (perf) without / with: %.3f / %.3f us (ratio %.3f)\n", ms["timer"] * 1000 / tn["timer"], ms["breakdown"] * 1000 / tn["breakdown"], (ms["breakdown"] / tn["breakdown"]) / (ms["timer"] / tn["timer"])
    }' rowsfile="$1" "${2:-/dev/null}" "$1"
  echo
}

failed=0
PERF=0
have_perf && PERF=1

ROWS="$OUT/timer.rows"
BROWS="$OUT/breakdown.rows"

# ---------------------------------------------------------------- comparison
if has_phase latency; then
  : >"$ROWS"
  echo "== comparison: ${COMPARISONS[*]}; $RUNS runs each, alternating (CPU $CPU, $LOOPS samples)"
  for run in $(seq 1 "$RUNS"); do
    for c in "${COMPARISONS[@]}"; do
      timer_run "$ROWS" "$c" "$run" || failed=1
    done
  done
  echo
fi

if has_phase cpu; then
  if [ "$PERF" = 1 ]; then
    echo "== CPU time of the whole process (perf stat -e task-clock): the same commands, $RUNS runs each, alternating"
    : >"$OUT/timer.taskclock"; : >"$OUT/timer.cpu"
    for run in $(seq 1 "$RUNS"); do
      for c in "${COMPARISONS[@]}"; do
        cpu_run timer "$run" "$c" || failed=1
      done
    done
  else
    echo "== CPU time of the whole process: skipped (perf not available: apt-get install linux-perf)"
  fi
  echo
fi

# ---------------------------------------------------------------- breakdown
if has_phase breakdown; then
  : >"$BROWS"
  echo "== --breakdown cost: latscope timer without and with --breakdown, $RUNS runs each, alternating"
  for run in $(seq 1 "$RUNS"); do
    timer_run "$BROWS" timer "bd$run" || failed=1
    timer_run "$BROWS" breakdown "bd$run" || failed=1
  done
  if [ "$PERF" = 1 ]; then
    : >"$OUT/breakdown.taskclock"; : >"$OUT/breakdown.cpu"
    for run in $(seq 1 "$RUNS"); do
      for c in timer breakdown; do
        cpu_run breakdown "$run" "$c" || failed=1
      done
    done
  fi
  echo
fi

# ---------------------------------------------------------------- reports
# (from the files in $OUT: those of earlier runs of the phases left out)
if [ -s "$ROWS" ]; then
  TC=""; [ -s "$OUT/timer.cpu" ] && TC="$OUT/timer.cpu"
  echo "######## latscope timer vs cyclictest, CPU $CPU, period $PERIOD_US us, $LOOPS samples per run"
  echo "(us; latscope from its JSON ns / 1000; cyclictest from its JSON: whole us truncated, or ns / 1000 with -N;"
  echo " thread CPU, no switch-in (periods of the window in which the thread was not switched in) and CPU $CPU busy from the probe window of each run)"
  echo
  per_run "$ROWS" | tee "$OUT/timer.runs"
  echo "Over all runs (avg weighted by samples; min lowest, max highest):"
  summary "$ROWS" "$TC" | tee "$OUT/timer.summary"
  if [ -n "$TC" ]; then
    echo "Whole process task-clock per run (ms / samples = us per sample; / wake-ups incl. latscope's warm-up = us per wake-up):"
    awk '{ printf "  %-13s run %s: %8.1f ms / %6d = %5.2f us per sample, / %6d = %5.2f us per wake-up; CPU %s other work %s %%\n", $1, $2, $3, $4, $3 * 1000 / $4, $5, $3 * 1000 / $5, cpu, $6 }' cpu="$CPU" "$TC"
    echo
  fi
  echo "== goals, all runs"
  goals "$ROWS" "$TC" | tee "$OUT/timer.goals"
  quiet "$ROWS" >"$ROWS.quiet"
  QTC=""; [ -n "$TC" ] && { quiet "$TC" >"$OUT/timer.quiet.cpu"; QTC="$OUT/timer.quiet.cpu"; }
  echo "== the same over the undisturbed runs only (CPU $CPU at most $OTHER_MAX % busy with other work; runs left per command:$(cut -f1 "$ROWS.quiet" | sort | uniq -c | awk '{ printf " %s %s", $2, $1 }')$([ -n "$QTC" ] && cut -d' ' -f1 "$QTC" | sort | uniq -c | awk 'BEGIN { printf "; perf runs:" } { printf " %s %s", $2, $1 }'))"
  summary "$ROWS.quiet" "$QTC" | tee "$OUT/timer.quiet.summary"
  goals "$ROWS.quiet" "$QTC" | tee "$OUT/timer.quiet.goals"
fi

if [ -s "$BROWS" ]; then
  BTC=""; [ -s "$OUT/breakdown.cpu" ] && BTC="$OUT/breakdown.cpu"
  echo "######## --breakdown cost: latscope timer -c $CPU -p $PERIOD_US -P 99 -T $SECS -q, without (timer) and with (breakdown)"
  per_run "$BROWS" | tee "$OUT/breakdown.runs"
  summary "$BROWS" "$BTC" | tee "$OUT/breakdown.summary"
  breakdown_report "$BROWS" "$BTC" | tee "$OUT/breakdown.goals"
  quiet "$BROWS" >"$BROWS.quiet"
  QBTC=""; [ -n "$BTC" ] && { quiet "$BTC" >"$OUT/breakdown.quiet.cpu"; QBTC="$OUT/breakdown.quiet.cpu"; }
  echo "== the same over the undisturbed runs only (runs left:$(cut -f1 "$BROWS.quiet" | sort | uniq -c | awk '{ printf " %s %s", $2, $1 }')$([ -n "$QBTC" ] && cut -d' ' -f1 "$QBTC" | sort | uniq -c | awk 'BEGIN { printf "; perf runs:" } { printf " %s %s", $2, $1 }'))"
  summary "$BROWS.quiet" "$QBTC" | tee "$OUT/breakdown.quiet.summary"
  breakdown_report "$BROWS.quiet" "$QBTC" | tee "$OUT/breakdown.quiet.goals"
fi

echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "raw outputs: $OUT (rows: $ROWS_HEADER)"
exit "$failed"

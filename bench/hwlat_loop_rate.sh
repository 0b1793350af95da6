#!/usr/bin/env bash
# The loop rate of `latscope hwlat --tier bpf` beside `latscope noise` (and
# `hwlat --tier unprivileged`, the same loop without the counter's loads), and
# of `noise` with its interference counter (the HW column) beside `noise
# --no-hw-counter`, on one CPU, side by side in alternating rounds; then what
# the interference counter's programs cost per event (kernel.bpf_stats_enabled).
#
#   bench/hwlat_loop_rate.sh [--pairs N] [--seconds S] [--cpu C] [--out DIR]
#
# 1. Builds latscope in release mode (cargo build --release).
# 2. N rounds (default 6), each in this order (C = --cpu, default 1;
#    S = --seconds, default 4; statistics off):
#      latscope hwlat --tier bpf          --cpu C -D S --json F
#      latscope noise --cpus C -p 95 -D S --json F
#      latscope hwlat --tier unprivileged --cpu C -D S --json F
#      latscope noise --cpus C -p 95 -D S --no-hw-counter --json F
#    noise at hwlat's FIFO 95: at SCHED_OTHER a shared machine's other tasks
#    take part of its spun time and halve its rate.
#    hwlat spins 500 ms of every 1 s, noise all the time: the rates are per
#    second of spinning (hwlat: loops_per_s, pairs read per second, each pair
#    two clock reads and two counter loads; noise: loops_per_s, one clock
#    read each).
# 3. Per round the rates and the ratios hwlat-bpf/noise (loops, and clock
#    reads: 2 x loops), hwlat-bpf/hwlat-unprivileged (what the counter's
#    two loads cost the loop) and noise/noise-without-counter (what its one
#    load per iteration costs noise's loop); then the medians.
# 4. One more bpf run with kernel.bpf_stats_enabled=1: `bpftool prog show -j`
#    1 s in and 1 s before its end gives each latscope_hw_ program's runs
#    and run time: ns per interference event (bench/lib.sh program_costs).
#
# Needs root, jq, bpftool and python3. Each command is bounded (S + 30 s) and stopped
# with its process group on Ctrl-C; the sysctl is put back on every exit.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
OUT=""
PAIRS=6
SECS=4
CPU=1
bench_options "pairs seconds cpu out" "$@"
bench_setup "hwlat --tier bpf needs root (or CAP_BPF and CAP_PERFMON)" jq bpftool python3

S=$SECS
ROWS="$OUT/rows.tsv"
: >"$ROWS"
rate() { # $1 = tool, $2 = round, $3 = JSON
  jq -r --arg t "$1" --arg r "$2" \
    '[$t, $r, .tests[0].series[0].detail.loops_per_s] | @tsv' "$3" >>"$ROWS"
}

bpf_stats off
echo "== rounds (hwlat bpf, noise, hwlat unprivileged; bpf statistics off)"
for round in $(seq 1 "$PAIRS"); do
  name="bpf-$round"
  run_bounded "$name" $((S + 30)) "$LATSCOPE" hwlat --tier bpf --cpu "$CPU" -D "$S" -q \
    --json "$OUT/$name.json" && rate hwlat-bpf "$round" "$OUT/$name.json"
  name="noise-$round"
  run_bounded "$name" $((S + 30)) "$LATSCOPE" noise --cpus "$CPU" -p 95 -D "$S" -q \
    --json "$OUT/$name.json" && rate noise "$round" "$OUT/$name.json"
  name="unpriv-$round"
  run_bounded "$name" $((S + 30)) "$LATSCOPE" hwlat --tier unprivileged --cpu "$CPU" -D "$S" -q \
    --json "$OUT/$name.json" && rate hwlat-unpriv "$round" "$OUT/$name.json"
  name="nohw-$round"
  run_bounded "$name" $((S + 30)) "$LATSCOPE" noise --cpus "$CPU" -p 95 -D "$S" -q --no-hw-counter \
    --json "$OUT/$name.json" && rate noise-nohw "$round" "$OUT/$name.json"
done

echo
echo "== loops per second of spinning, per round"
python3 - "$ROWS" <<'PY'
import statistics, sys
v = {}
for line in open(sys.argv[1]):
    tool, rnd, rate = line.rstrip("\n").split("\t")
    v[(tool, int(rnd))] = float(rate)
print(f"{'round':6} {'hwlat-bpf':>14} {'noise':>14} {'hwlat-unpriv':>14} {'noise-nohw':>14} {'bpf/noise':>10} {'reads ratio':>12} {'bpf/unpriv':>10} {'noise/nohw':>10}")
bo, bu, nn = [], [], []
for r in sorted({r for _, r in v}):
    b, o, u, n = (v.get((t, r)) for t in ("hwlat-bpf", "noise", "hwlat-unpriv", "noise-nohw"))
    if None in (b, o, u, n):
        continue
    bo.append(b / o); bu.append(b / u); nn.append(o / n)
    print(f"{r:<6} {b:>14,.0f} {o:>14,.0f} {u:>14,.0f} {n:>14,.0f} {b / o:>10.3f} {2 * b / o:>12.3f} {b / u:>10.3f} {o / n:>10.3f}")
if bo:
    m = statistics.median(bo)
    print(f"{'median':6} {'':>59} {m:>10.3f} {2 * m:>12.3f} {statistics.median(bu):>10.3f} {statistics.median(nn):>10.3f}")
PY

echo
echo "== the counter's programs: cost per interference event (kernel.bpf_stats_enabled=1, one run)"
bpf_stats on
RUN_PROBE=snapshot_programs
run_bounded bpf-stats $((S + 30)) "$LATSCOPE" hwlat --tier bpf --cpu "$CPU" -D "$S" -q \
  --json "$OUT/bpf-stats.json"
RUN_PROBE=""
bpf_stats_restore
program_costs "$OUT/bpf-stats.before.json" "$OUT/bpf-stats.after.json" "$(nproc)"
echo
echo "files: $OUT"

#!/usr/bin/env bash
# The figures behind docs/measurement.md's scale projection: what each
# in-kernel collection costs per program run and per CPU, how many events a
# CPU makes, and what the user-space side costs per sample and per spike.
#
#   bench/scale_cost.sh [--seconds S] [--threshold USEC] [--out DIR]
#
# For each load (quiet; `stress-ng --cpu 2 --io 1` beside it) and each period
# P (100 us, 50 us), four runs of
#   latscope timer --cpus 0,1 -p P -P 99 -T S --json FILE -q
#     base       (nothing more)
#     breakdown  --breakdown --collector bpf
#     recorder   --trace-spikes T --collector bpf
#     tracefs    --trace-spikes T --collector tracefs
# (S = --seconds, default 4; T = --threshold, default 50). For the two bpf
# runs, kernel.bpf_stats_enabled is 1 and `bpftool prog show -j` is read
# 1 s in and 1 s before the end: per program the runs per second per CPU,
# the ns per run and the share of each CPU (bench/lib.sh's program_costs).
# Per run: samples, the process's user CPU time (the breakdown's minus the
# base's, per sample: the sampling threads' slot reads), the spikes and the
# collector thread's CPU time (per spike for the recorder; per event read
# for tracefs).
#
# Needs root, jq, bpftool, stress-ng. Each run is bounded (S + 30 s); the
# load is stopped and the sysctl put back on every exit.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
OUT=""
SECS=4
THRESHOLD=50
bench_options "seconds threshold out" "$@"
bench_setup "needs root (BPF, tracefs, SCHED_FIFO)" jq bpftool stress-ng
S=$SECS

LOAD_PID=""
stop_load() {
  [ -n "$LOAD_PID" ] || return 0
  kill -TERM -- "-$LOAD_PID" 2>/dev/null
  wait "$LOAD_PID" 2>/dev/null
  LOAD_PID=""
}
bench_cleanup() { stop_load; }

snapshot_programs() { # $1 = process group, $2 = run name
  sleep 1
  programs_snapshot "$OUT/$2.before.json" "$1"
  sleep $((S - 2 > 0 ? S - 2 : 1))
  programs_snapshot "$OUT/$2.after.json" "$1"
}

ROWS="$OUT/rows.tsv"
: >"$ROWS"
for load in quiet stress; do
  if [ "$load" = stress ]; then
    stress-ng --cpu 2 --io 1 --timeout 600 >"$OUT/stress.out" 2>&1 &
    LOAD_PID=$!
    sleep 2
  fi
  for period in 100 50; do
    for what in base breakdown recorder tracefs; do
      name="$load-$period-$what"
      extra=()
      case $what in
        breakdown) extra=(--breakdown --collector bpf) ;;
        recorder) extra=(--trace-spikes "$THRESHOLD" --collector bpf) ;;
        tracefs) extra=(--trace-spikes "$THRESHOLD" --collector tracefs) ;;
      esac
      RUN_PROBE=""
      case $what in breakdown | recorder) RUN_PROBE=snapshot_programs; bpf_stats on ;; esac
      run_bounded "$name" $((S + 30)) "$LATSCOPE" timer --cpus 0,1 -p "$period" -P 99 -T "$S" \
        "${extra[@]}" --json "$OUT/$name.json" -q || continue
      RUN_PROBE=""
      bpf_stats off
      read -r user sys <"$OUT/$name.cpu"
      jq -r --arg n "$name" --arg u "$user" --arg s "$sys" '
        .tests[0] as $t | ($t.spikes // {}) as $k |
        [$n, $t.overall.samples, $u, $s,
         ($k.spikes_seen // "-"), ($k.events_read // "-"),
         (if $k.reader_cpu_ns then $k.reader_cpu_ns / 1e6 else "-" end)] | @tsv' \
        "$OUT/$name.json" >>"$ROWS"
      if [ -f "$OUT/$name.after.json" ]; then
        echo "-- $name: programs (2 CPUs)"
        program_costs "$OUT/$name.before.json" "$OUT/$name.after.json" 2 | tee "$OUT/$name.programs"
      fi
    done
  done
  stop_load
done

echo
echo "== per run"
{
  printf 'run\tsamples\tuser_s\tsys_s\tspikes\tevents_read\tcollector_ms\n'
  cat "$ROWS"
} | column -t -s $'\t'
echo
echo "== per sample and per spike"
awk -F'\t' '
  { split($1, k, "-"); key = k[1] "-" k[2]; samples[$1] = $2; user[$1] = $3
    spikes[$1] = $5; events[$1] = $6; ms[$1] = $7 }
  END {
    for (r in samples) {
      split(r, k, "-"); key = k[1] "-" k[2]
      if (k[3] == "breakdown" && ((key "-base") in user) && samples[r] > 0)
        printf "%s: breakdown user CPU per sample %.0f ns more than base (noise-bound on a shared machine)\n", key, (user[r] - user[key "-base"]) / samples[r] * 1e9
      if (k[3] == "recorder" && spikes[r] > 0)
        printf "%s: recorder collector CPU per spike %.1f us (%d spikes)\n", key, ms[r] * 1000 / spikes[r], spikes[r]
      if (k[3] == "tracefs" && events[r] > 0)
        printf "%s: tracefs reader CPU per event %.3f us (%d events)\n", key, ms[r] * 1000 / events[r], events[r]
    }
  }' "$ROWS" | sort
echo
echo "files: $OUT"

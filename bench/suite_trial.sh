#!/usr/bin/env bash
# The whole suite as a trial run: under another host name and date, quiet or
# beside `stress-ng --cpu 2 --io 1`, and what it left behind.
#
#   bench/suite_trial.sh NAME [quiet|stress] [HOST] [DATE]
#
# - NAME names the output directory, /tmp/suite-trial/NAME (the run's log,
#   the skips' ledger, the machine's state before and after, the summary).
# - HOST (default rig-17): the run's host name, in a private UTS namespace
#   (`unshare --uts`): the machine's own name is never changed.
# - DATE (default: none): `date -s DATE` before the run, and the real time
#   put back after it (the start's real time plus the run's monotonic
#   length), also on Ctrl-C. The whole machine sees that date while the
#   suite runs: do not run it beside other work that reads the calendar.
#   libfaketime cannot stand in (docs/hardening.md: its clock_nanosleep
#   wrapper breaks absolute CLOCK_MONOTONIC sleeps).
# - CARGO_TARGET_DIR defaults to /tmp/suite-trial/target, away from the
#   work tree's, as the trials ask.
#
# The summary: cargo's per-binary results added up, the skips (whole tests
# and parts) from the ledger latscope::testing::skip writes, the failed
# tests by name, the wall time, and the difference of the leftover state
# (message queues, /dev/shm, System V IPC, tracefs instances, BPF programs,
# mounts, latscope's registry, processes named latscope).
set -euo pipefail
name=${1:?usage: bench/suite_trial.sh NAME [quiet|stress] [HOST] [DATE]}
mode=${2:-quiet}
host=${3:-rig-17}
when=${4:-}
case $mode in quiet | stress) ;; *) echo "suite_trial.sh: mode is quiet or stress, not '$mode'" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "suite_trial.sh: run as root (the suite's privileged tests, unshare, date)" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
out=/tmp/suite-trial/$name
mkdir -p "$out"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/tmp/suite-trial/target}

state() {
  {
    echo "== mqueue"; ls /dev/mqueue 2>/dev/null | grep -v '^$' || true
    echo "== shm"; ls /dev/shm 2>/dev/null || true
    echo "== sysv"; ipcs 2>/dev/null | awk 'NF && $1 ~ /^0x/' || true
    echo "== tracefs instances"; ls /sys/kernel/tracing/instances 2>/dev/null || true
    echo "== bpf programs"; { bpftool prog show 2>/dev/null | grep -o 'name latscope[a-z_0-9]*' || true; } | sort | uniq -c
    echo "== mounts"; awk '{ print $2, $3 }' /proc/mounts | grep -v '^/proc/' | sort
    echo "== registry"; ls /run/latscope 2>/dev/null || true
    echo "== processes"; pgrep -a 'latscope|stress-ng|hackbench' | grep -v suite_trial || true
  } 2>&1
}

stress_pid=
real_start=
mono_start=
restore() {
  [ -n "$stress_pid" ] && kill -- -"$stress_pid" 2>/dev/null && wait "$stress_pid" 2>/dev/null
  stress_pid=
  if [ -n "$real_start" ]; then
    local now
    now=$(( real_start + $(cut -d. -f1 /proc/uptime) - mono_start ))
    date -s "@$now" >/dev/null && echo "date put back: $(date -u)"
    real_start=
  fi
}
trap restore EXIT
trap 'restore; exit 130' INT TERM

cd "$repo"
echo "building the tests (not timed)..."
cargo test --release --no-run >"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; exit 1; }
state >"$out/state.before"
if [ "$mode" = stress ]; then
  command -v stress-ng >/dev/null || { echo "suite_trial.sh: stress-ng is not installed" >&2; exit 2; }
  setsid stress-ng --cpu 2 --io 1 --quiet &
  stress_pid=$!
fi
if [ -n "$when" ]; then
  real_start=$(date +%s)
  mono_start=$(cut -d. -f1 /proc/uptime)
  date -s "$when" >/dev/null
  echo "date set to $(date -u) for the run"
fi
: >"$out/skips"
start=$(date +%s.%N)
status=0
LATSCOPE_SKIP_LOG="$out/skips" unshare --uts sh -c 'hostname "$1"; shift; exec "$@"' sh "$host" \
  cargo test --release --no-fail-fast >"$out/log" 2>&1 || status=$?
end=$(date +%s.%N)
restore
state >"$out/state.after"

{
  echo "trial $name: mode $mode, host $host, date ${when:-unchanged}, commit $(git rev-parse --short HEAD)"
  awk -v skipped="$(sort -u "$out/skips" | grep -vc '^SKIPPED PART ')" \
      -v parts="$(sort -u "$out/skips" | grep -c '^SKIPPED PART ')" \
    '/^test result:/ { for (i = 1; i <= NF; i++) {
         if ($i == "passed;") p += $(i-1); if ($i == "failed;") f += $(i-1) } }
     END { printf "%d passed, %d failed, %d skipped (and %d parts of passing tests)\n", p - skipped, f, skipped, parts }' "$out/log"
  grep -E '^test .* FAILED$|^    [a-z_:]+$' "$out/log" | sort -u | sed 's/^/  failed: /' || true
  sort -u "$out/skips" | sed 's/^/  /'
  awk -v s="$start" -v e="$end" -v c="$status" 'BEGIN { printf "wall time: %.0f s, cargo exit %s\n", e - s, c }' 
  echo "left behind (state after minus before):"
  diff "$out/state.before" "$out/state.after" | grep '^>' || echo "  nothing"
} | tee "$out/summary"
exit "$status"

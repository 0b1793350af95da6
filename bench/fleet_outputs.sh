#!/usr/bin/env bash
# What the fleet outputs cost a long run (issue 21, docs/benchmarks.md part 9):
#
# 1. one long timer run (default 10 minutes) with every output on (--json,
#    --csv, --markdown, --junit, --prom, --hdr-log, --samples): its resident
#    memory sampled every 5 s (VmRSS, and VmHWM at the end), to show it flat;
#    the CPUs each of its threads may run on (Cpus_allowed_list) and last ran
#    on, so that the rewrites (not on the measuring thread) are seen to stay
#    off the measured CPU;
# 2. alternating pairs of shorter runs without and with the outputs: avg and
#    p99 of each, from the JSON (which both write), as ratios.
#
# Usage: bench/fleet_outputs.sh [--minutes M] [--pairs N] [--pair-seconds S]
#                               [--cpu C] [--out DIR]
# Needs root (SCHED_FIFO priority 80, mlockall) and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=10 pairs=4 pair_s=30 cpu=1 out=
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --pair-seconds) pair_s=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "fleet_outputs.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "fleet_outputs.sh: run as root (SCHED_FIFO, mlockall)" >&2; exit 2; }
cargo build --release -q
bin=$PWD/target/release/latscope
out=${out:-$(mktemp -d)}
mkdir -p "$out"
echo "raw files in $out"

timer=(timer -c "$cpu" -P 80 -q)
all_outputs() {  # $1: file stem
  echo --json "$1.json" --csv "$1.csv" --markdown "$1.md" --max-latency 10000 \
    --junit "$1.junit.xml" --prom "$1.prom" --hdr-log "$1.hlog" --samples "$1.samples"
}

# 1. The long run, sampled.
long=$out/long
# shellcheck disable=SC2046
"$bin" "${timer[@]}" -T "$((minutes * 60))" $(all_outputs "$long") >"$long.out" 2>"$long.err" &
pid=$!
echo "second rss_kib" >"$long.rss"
start=$(date +%s)
threads_seen=$out/long.threads
: >"$threads_seen"
while kill -0 "$pid" 2>/dev/null; do
  now=$(( $(date +%s) - start ))
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
  [ -n "$rss" ] && echo "$now $rss" >>"$long.rss"
  for task in /proc/"$pid"/task/*; do
    [ -r "$task/stat" ] || continue
    name=$(cat "$task/comm" 2>/dev/null || true)
    allowed=$(awk '/^Cpus_allowed_list:/ {print $2}' "$task/status" 2>/dev/null || true)
    # Field 39 of stat is the CPU the task last ran on (counted after the
    # command name, which may hold spaces).
    last=$(sed 's/.*) //' "$task/stat" 2>/dev/null | awk '{print $37}' || true)
    [ -n "$name" ] && echo "$name allowed=$allowed last=$last" >>"$threads_seen"
  done
  sleep 5
done
wait "$pid" && rc=0 || rc=$?
echo "long run: exit $rc"
awk 'NR == 2 {first = $2} NR > 2 && $1 >= 30 && !settled {settled = $2}
     NR > 1 {last = $2; if ($2 > max) max = $2; n++}
     END {printf "RSS KiB: first sample %d, at 30 s %d, last %d, max %d (%d samples)\n",
          first, settled, last, max, n}' "$long.rss"
echo "threads (name, CPUs allowed, CPUs last seen on):"
sort "$threads_seen" | awk '{split($3, l, "="); key = $1 " " $2; seen[key] = seen[key] " " l[2]}
  END {for (k in seen) {n = split(seen[k], c, " "); delete u; s = "";
       for (i = 1; i <= n; i++) if (!(c[i] in u)) {u[c[i]] = 1; s = s " " c[i]}
       print "  " k " last on:" s}}' | sort
ls -l "$long".*

# 2. Alternating pairs: without outputs (only --json, to read the figures),
#    then with all of them; the order flips every pair.
figures() {  # $1: json -> "avg_ns p99_ns samples"
  python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["tests"][0]
o = t["overall"]
p99 = next(p["ns"] for p in o["percentiles"] if p["percentile"] == 99.0)
print(o["avg_ns"], p99, o["samples"])' "$1"
}
echo "pair order run avg_ns p99_ns samples"
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) = 1 ]; then order="plain all"; else order="all plain"; fi
  for kind in $order; do
    stem=$out/pair$i-$kind
    if [ "$kind" = plain ]; then
      "$bin" "${timer[@]}" -T "$pair_s" --json "$stem.json" >/dev/null 2>&1
    else
      # shellcheck disable=SC2046
      "$bin" "${timer[@]}" -T "$pair_s" $(all_outputs "$stem") >/dev/null 2>&1
    fi
    echo "$i $order $kind $(figures "$stem.json")"
  done
done | tee "$out/pairs.txt"
python3 - "$out/pairs.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l[0].isdigit()]
by = {"plain": [], "all": []}
for r in rows:
    by[r[3]].append((float(r[4]), float(r[5])))
for k in by:
    avg = statistics.median(a for a, _ in by[k]); p99 = statistics.median(p for _, p in by[k])
    print(f"{k:5s}: median avg {avg:.0f} ns, median p99 {p99:.0f} ns "
          f"(avg {min(a for a,_ in by[k]):.0f}..{max(a for a,_ in by[k]):.0f}, "
          f"p99 {min(p for _,p in by[k]):.0f}..{max(p for _,p in by[k]):.0f})")
a = statistics.median(x for x, _ in by["all"]) / statistics.median(x for x, _ in by["plain"])
p = statistics.median(x for _, x in by["all"]) / statistics.median(x for _, x in by["plain"])
print(f"ratio with/without outputs: avg {a:.3f}, p99 {p:.3f}")
PY

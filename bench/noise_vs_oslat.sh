#!/usr/bin/env bash
# Compare `latscope noise` and the drop-in `latscope oslat` with rt-tests'
# oslat on one CPU of this machine:
# the spinning loop's rate (clock reads per second of the run) and the
# physics (the largest interruption, and the interruptions of 10 us or more).
#
#   bench/noise_vs_oslat.sh [--runs N] [--cpu CPU] [--duration SECONDS] [--out DIR]
#
# 1. Builds latscope in release mode.
# 2. N runs each (default 5), alternating: oslat -c CPU -D S --json, then
#    latscope noise --cpus CPU -D S --threshold 1us --json, then latscope
#    oslat -c CPU -D S --json (oslat's JSON layout), all SCHED_OTHER
#    (oslat's default; -f would be FIFO), so that slow drifts of the
#    machine's load spread over the tools.
# 3. Per run: iterations per second (oslat: the sum of its buckets, one per
#    loop iteration, over its duration; latscope: loops_per_s), the largest
#    interruption, and the count of interruptions >= 10 us (oslat: the
#    buckets above 10 us: bucket "11" holds [10, 11) us; latscope: its HDR histogram's buckets from 10 us,
#    to the histogram's precision). Then the median of each and the ratios.
# Needs: oslat (Debian package rt-tests), python3.
set -euo pipefail
runs=5 cpu=1 duration=2 out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs=$2; shift 2 ;;
        --cpu) cpu=$2; shift 2 ;;
        --duration) duration=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "usage: $0 [--runs N] [--cpu CPU] [--duration S] [--out DIR]" >&2; exit 2 ;;
    esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
command -v oslat >/dev/null || { echo "oslat not found (apt-get install rt-tests)" >&2; exit 1; }
(cd "$here" && cargo build --release --quiet)
latscope="$here/target/release/latscope"
[ -n "$out" ] || out=$(mktemp -d /tmp/noise-vs-oslat.XXXXXX)
mkdir -p "$out"
for i in $(seq 1 "$runs"); do
    oslat -c "$cpu" -D "$duration" --json "$out/oslat-$i.json" > "$out/oslat-$i.txt"
    "$latscope" noise --cpus "$cpu" -D "$duration" --threshold 1us -q \
        --json "$out/latscope-$i.json" > "$out/latscope-$i.txt"
    "$latscope" oslat -c "$cpu" -D "$duration" --json "$out/dropin-$i.json" \
        > "$out/dropin-$i.txt" 2> "$out/dropin-$i.err"
done
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows = {"oslat": [], "latscope": [], "lat-oslat": []}
def oslat_row(path):
    o = json.load(open(path))["thread"]["0"]
    count = sum(o["histogram"].values())
    return (count / o["duration"], o["max"],
            sum(v for k, v in o["histogram"].items() if int(k) >= 11))
for i in range(1, runs + 1):
    rows["oslat"].append(oslat_row(f"{out}/oslat-{i}.json"))
    rows["lat-oslat"].append(oslat_row(f"{out}/dropin-{i}.json"))
    s = json.load(open(f"{out}/latscope-{i}.json"))["tests"][0]["series"][0]
    ge10 = sum(b["count"] for b in s["histogram"] if b["low_ns"] >= 10_000)
    rows["latscope"].append((s["detail"]["loops_per_s"], s["max_ns"] / 1000, ge10))
print(f"{'tool':10} {'run':>3} {'iterations/s':>14} {'max (us)':>10} {'>= 10 us':>9}")
for tool, rs in rows.items():
    for i, r in enumerate(rs, 1):
        print(f"{tool:10} {i:>3} {r[0]:>14,.0f} {r[1]:>10.1f} {r[2]:>9}")
med = {t: [statistics.median(c) for c in zip(*rs)] for t, rs in rows.items()}
for t, m in med.items():
    print(f"{t:10} med {m[0]:>14,.0f} {m[1]:>10.1f} {m[2]:>9.0f}")
o = med["oslat"]
for name, tool in (("latscope noise", "latscope"), ("latscope oslat", "lat-oslat")):
    l = med[tool]
    print(f"ratio {name}/oslat: iterations/s {l[0] / o[0]:.3f}, max {l[1] / max(o[1], 1e-9):.2f}, >= 10 us {l[2] / max(o[2], 1):.2f}")
PY
echo "raw files in $out"

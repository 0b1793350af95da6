#!/usr/bin/env bash
# How long `latscope report` takes on a 24-hour report, and how big the page
# is: a real short futex run's report, grown to 16 series of 86 400 one-second
# windows each (python3), then `latscope report` timed three times and the
# page shown once by headless Chromium (when installed).
# Usage: bench/report_24h.sh [WORKDIR]   (needs a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/target/release/latscope
work=${1:-$(mktemp -d)}
mkdir -p "$work" && cd "$work"
"$bin" futex -l 2000 -i 100 -q --json seed.json >/dev/null
python3 - <<'PY'
import copy, json, random
r = json.load(open("seed.json"))
test = r["tests"][0]
random.seed(1)
series = []
for i in range(16):
    s = copy.deepcopy(test["series"][0])
    s["label"] = f"pair {i}"
    s["per_second"] = [
        {"second": t, "span_s": 1, "samples": 5000, "min_ns": 1000 + random.randint(0, 300),
         "avg_ns": 3000.5, "max_ns": 5000 + random.randint(0, 20000)}
        for t in range(86400)
    ]
    series.append(s)
test["series"] = series
json.dump(r, open("day.json", "w"))
PY
ls -l day.json
for _ in 1 2 3; do /usr/bin/time -f "report: %e s wall, %M KiB max RSS" "$bin" report day.json -o day.html; done
ls -l day.html
if command -v chromium >/dev/null; then
  start=$(date +%s.%N)
  chromium --headless --no-sandbox --disable-gpu --screenshot="$work/day.png" \
    --window-size=1280,2000 "file://$work/day.html" 2>/dev/null
  echo "chromium: $(echo "$(date +%s.%N) - $start" | bc) s wall (start, load, draw, screenshot)"
fi

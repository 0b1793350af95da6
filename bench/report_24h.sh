#!/usr/bin/env bash
# How long `latscope report` takes on a 24-hour report, and how big the page
# is: a real short futex run's report, grown to 16 series of 86 400 one-second
# windows each (python3), then `latscope report` timed three times and the
# page shown by headless Chromium (when installed): wall time against a tiny
# page's, and the time to the load event with the layout done, inside it.
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
         "avg_ns": 3000.5, "max_ns": 5000 + random.randint(0, 20000),
         # schema 3: each window's own percentiles (drawn as the p99 line)
         "p50_ns": 2900, "p99_ns": 4000 + random.randint(0, 900), "p999_ns": 4950}
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
  shot() {  # $1: page; prints the wall time of start, load, draw, screenshot
    local start; start=$(date +%s.%N)
    chromium --headless --no-sandbox --disable-gpu --screenshot="$work/shot.png" \
      --window-size=1280,2000 "file://$1" 2>/dev/null
    echo "$(date +%s.%N) - $start" | bc
  }
  # The browser's own start-up is most of a headless run on a busy machine:
  # a one-line page, measured back to back with the big one, is the baseline.
  echo '<!DOCTYPE html><p>x</p>' > "$work/tiny.html"
  for _ in 1 2 3; do
    echo "chromium: day.html $(shot "$work/day.html") s, tiny page $(shot "$work/tiny.html") s wall (start, load, draw, screenshot)"
  done
  # Inside the browser: from navigation start to the load event with the
  # layout forced (the SVG plots laid out), by a script in a copy of the page
  # (the page latscope writes has none).
  sed 's|</body>|<script>addEventListener("load", () => { document.body.offsetHeight; const p = document.createElement("pre"); p.id = "ms"; p.textContent = "MS " + performance.now().toFixed(0); document.body.append(p); });</script></body>|' \
    "$work/day.html" > "$work/day.probe.html"
  for _ in 1 2 3; do
    ms=$(chromium --headless --no-sandbox --disable-gpu --window-size=1280,2000 --dump-dom \
      "file://$work/day.probe.html" 2>/dev/null | grep -o 'MS [0-9][0-9]*' | cut -d' ' -f2)
    echo "chromium: day.html parsed, loaded and laid out in $ms ms (performance.now() at the load event)"
  done
fi

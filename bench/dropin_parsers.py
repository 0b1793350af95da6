#!/usr/bin/env python3
"""What real consumers of rt-tests output (cyclictest, ptsematest, oslat, ...) get out of a run.

bench/dropin_diff.sh runs this on the real tool's and on latscope's outputs
of the same command line and compares what it prints: the parsed values'
structure (which fields were found, how many rows/threads, their types),
never the measured values themselves.

The parsing rules are written from how these consumers read the output (their
logic re-stated here, not their code):
  osadl    OSADL's latency-plot recipe: the `-h` rows (every line that is
           neither a comment nor empty; first column the bucket, one count
           column per thread) and the largest value of `# Max Latencies:`.
  rteval   rteval's cyclictest module: `# Min/Avg/Max Latencies:`,
           `# Histogram Overflows:` and `# Total:` give one value per core;
           every other line is `bucket count count ...`.
  lava     Linaro test-definitions: the text after the last ESC (the final
           redraw of the running display), its `T:` lines read with a regex
           (thread, tid, priority, interval, cycles, min, act, avg, max);
           for ptsematest the `#N -> #M, Min, Cur, Avg, Max` lines.
  json     kernelci / LAVA's rt-tests JSON: the header keys (stray colons
           included), num_threads, and per thread the keys and value types.
  openshift  Red Hat's OpenShift latency test (cnf-features-deploy) on oslat:
           the first match of `Maximum:\t*([\s\d]*)\(us\)`, split on
           spaces, each non-empty word read as an integer (the test fails
           when one is not).
  microshift  MicroShift's CI on oslat's --json: every thread's `max`, an
           integer it compares with its threshold.

  dropin_parsers.py STDOUT_FILE [JSON_FILE]
"""

import json
import re
import sys

T_LINE = re.compile(
    r"T:\s*(\d+)\s+\(\s*(\d+)\)\s+P:\s*(\d+)\s+I:\s*(\d+)\s+C:\s*(\d+)\s+"
    r"Min:\s*(-?\d+)\s+Act:\s*(-?\d+)\s+Avg:\s*(-?\d+)\s+Max:\s*(-?\d+)"
)
PAIR_LINE = re.compile(
    r"#(\d+) -> #(\d+), Min\s+(-?\d+), Cur\s+(-?\d+), Avg\s+(-?\d+), Max\s+(-?\d+)"
)
FOOTER = ("Min Latencies", "Avg Latencies", "Max Latencies", "Histogram Overflows", "Total")


def kind(value):
    return type(value).__name__


def osadl(text):
    rows = [l.split() for l in text.splitlines() if l and not l.startswith("#")]
    rows = [r for r in rows if all(c.isdigit() for c in r)]
    maxima = []
    for line in text.splitlines():
        if line.startswith("# Max Latencies:"):
            maxima = [int(v) for v in line.split(":", 1)[1].split()]
    return {
        "rows": len(rows),
        "columns": sorted({len(r) for r in rows}),
        "max_latency_found": bool(maxima),
        "max_latency_type": kind(max(maxima)) if maxima else None,
    }


def rteval(text):
    footer = {}
    buckets = 0
    cores = set()
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("#"):
            for name in FOOTER:
                if line.startswith("# %s:" % name):
                    footer[name] = len(line.split(":", 1)[1].split())
            continue
        fields = line.split()
        if fields and all(f.isdigit() for f in fields):
            buckets += 1
            cores.add(len(fields) - 1)
    return {"footer_values_per_line": footer, "buckets": buckets, "cores": sorted(cores)}


def lava(text):
    final = text.rsplit("\x1b", 1)[-1]
    threads = [T_LINE.search(l).groups() for l in final.splitlines() if T_LINE.search(l)]
    pairs = [PAIR_LINE.search(l).groups() for l in final.splitlines() if PAIR_LINE.search(l)]
    return {
        "threads": [t[0] for t in threads],
        "priorities": [t[2] for t in threads],
        "intervals": [t[3] for t in threads],
        "pairs": [p[:2] for p in pairs],
    }


OSLAT_MAXIMUM = re.compile(r"Maximum:\t*([\s\d]*)\(us\)")


def openshift(text):
    found = OSLAT_MAXIMUM.search(text)
    if not found:
        return {"found": False}
    words = [w for w in found.group(1).split(" ") if w]
    return {"found": True, "values": len(words), "integers": all(w.isdigit() for w in words)}


def microshift(data):
    threads = data.get("thread")
    if not isinstance(threads, dict):
        return {"threads": None}
    return {
        "threads": sorted(threads),
        "max": [kind(t.get("max")) if isinstance(t, dict) else None for t in threads.values()],
    }


def shape(value):
    if isinstance(value, dict):
        # histogram buckets: which ones exist depends on the run
        if all(k.isdigit() for k in value):
            if not all(isinstance(v, int) for v in value.values()):
                return {"<bucket>": "not an int"}
            return {"<bucket>": "int"}
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return kind(value)


def json_file(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return {
        "keys": list(data),
        "num_threads": data.get("num_threads"),
        "shape": shape(data),
        "microshift": microshift(data),
    }


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    out = {"osadl": osadl(text), "rteval": rteval(text), "lava": lava(text), "openshift": openshift(text)}
    if len(sys.argv) == 3:
        try:
            out["json"] = json_file(sys.argv[2])
        except (OSError, ValueError) as e:
            out["json"] = "unreadable: %s" % type(e).__name__
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

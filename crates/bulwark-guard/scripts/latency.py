"""Latency of the guard per text, end to end (tokenize, encoder, head), through the `embed`
example fed over a pipe, for one or more builds interleaved in one run so that the
machine's background load falls on all of them alike (a same-run baseline).

    python3 scripts/latency.py MODEL_DIR EMBED [EMBED ...]

Prints p50 / p99 over 55 timed texts (after 5 warm-ups) for a 2 KB and a 900-byte English
text. Each EMBED is an `embed` example binary (`cargo build --release -p bulwark-guard
--example embed`), e.g. one built from main and one from a branch.
"""
import json
import subprocess
import sys
import time

BASE = ("The quarterly report lists revenue by region, churn by plan and the hiring plan "
        "for the next two quarters; see the appendix for the method and the raw tables. ")
model, bins = sys.argv[1], sys.argv[2:]
for nbytes in (2048, 900):
    text = (BASE * (nbytes // len(BASE) + 1))[:nbytes]
    procs = [subprocess.Popen([b, model], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, bufsize=1) for b in bins]
    times = [[] for _ in bins]
    for _ in range(60):
        for p, ts in zip(procs, times):
            t = time.perf_counter()
            p.stdin.write(json.dumps({"text": text}) + "\n")
            p.stdin.flush()
            p.stdout.readline()
            ts.append((time.perf_counter() - t) * 1000)
    for p in procs:
        p.stdin.close()
        p.wait()
    for b, ts in zip(bins, times):
        ts = sorted(ts[5:])
        print(f"{nbytes} bytes, {b}: p50 {ts[len(ts) // 2]:.1f} ms, p99 {ts[-1]:.1f} ms (n={len(ts)})")

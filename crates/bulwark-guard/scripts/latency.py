import json, subprocess, sys, time
base = ("The quarterly report lists revenue by region, churn by plan and the hiring plan "
        "for the next two quarters; see the appendix for the method and the raw tables. ")
for nbytes in (2048, 900):
    text = (base * (nbytes // len(base) + 1))[:nbytes]
    p = subprocess.Popen([sys.argv[1], sys.argv[2]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    ts = []
    for i in range(60):
        t = time.perf_counter()
        p.stdin.write(json.dumps({"text": text}) + "\n"); p.stdin.flush()
        out = json.loads(p.stdout.readline())
        ts.append((time.perf_counter() - t) * 1000)
    p.stdin.close(); p.wait()
    ts = sorted(ts[5:])
    print(nbytes, "bytes,", len(out["windows"]), "windows: p50 %.1f ms p99 %.1f ms" % (ts[len(ts)//2], ts[int(len(ts)*0.99)-1]))

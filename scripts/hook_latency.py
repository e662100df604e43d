#!/usr/bin/env python3
"""Wall time of one `bulwark hook claude-code` call, as Claude Code runs it: a new process,
the hook JSON on standard input, the answer on standard output.

Usage: hook_latency.py BULWARK_BINARY [RUNS]

Three rows: `--no-start` (every call loads and compiles the policy itself: the old
default), the first call of the default (no daemon yet: it decides, then starts one), and
the calls after it (answered by the daemon the first call started). The started daemon is
stopped at the end (by its process id, from STATE_DIR/daemon.log).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1]
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
N = [0]


def call():
    # A session per call: the same call repeated in one session is a loop, refused.
    N[0] += 1
    return json.dumps({
        "session_id": f"bench-{N[0]}", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "git status"}, "cwd": "/tmp",
    })


def once(state, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BULWARK_")}
    t = time.perf_counter()
    out = subprocess.run([BIN, "hook", "claude-code", "--state-dir", state, *extra],
                         input=call().encode(), capture_output=True, env=env, check=True)
    took = (time.perf_counter() - t) * 1000
    assert out.stdout.strip() == b"{}", out
    return took


def row(name, times):
    times = sorted(times)
    p90 = times[min(len(times) - 1, int(len(times) * 0.9))]
    print(f"{name:<38} n={len(times):<3} p50 {statistics.median(times):7.1f} ms   p90 {p90:7.1f} ms")


with tempfile.TemporaryDirectory() as state:
    row("--no-start (policy loaded per call)", [once(state, ["--no-start"]) for _ in range(RUNS)])
with tempfile.TemporaryDirectory() as state:
    first = once(state, [])
    log = os.path.join(state, "daemon.log")
    deadline = time.time() + 30
    pid = None
    while time.time() < deadline and pid is None:
        try:
            for line in open(log):
                if "listening on" in line:
                    pid = int(line.rsplit("pid ", 1)[1].rstrip(")\n"))
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    try:
        row("default, first call (starts a daemon)", [first])
        row("default, later calls (the daemon)", [once(state, []) for _ in range(RUNS)])
    finally:
        if pid:
            os.kill(pid, 15)

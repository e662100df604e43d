"""Trains the guard's logistic head on the dev half only, and scores the eval half.

    python scripts/train_head.py SETS_DIR > src/head.json      # train (reads dev only)
    python scripts/train_head.py SETS_DIR --eval [FASTPATH]     # report on eval

SETS_DIR holds dev.jsonl / eval.jsonl (scripts/build_sets.py) and dev.emb.jsonl /
eval.emb.jsonl (their window embeddings from `cargo run --release --example embed`).
Needs numpy. Deterministic: L2-regularised logistic regression fitted by Newton's method
(the problem is convex; no seeds), classes weighted to equal mass.

Every window of a negative row is a negative; every window of a positive row is a
positive (training positives are built one window long, so the window holds the attack).
With --eval, a row's score is the maximum over its windows, as in production; FASTPATH is
an optional JSON-lines file with {"flagged": bool} per eval row (the scanner's verdict),
to report recall and false positives with and without the guard.
"""
import collections
import json
import sys

import numpy as np

L2 = 1e-4  # chosen by 5-fold CV on dev only (/tmp cv: 1e-3 recall .33, 1e-4 .60, 1e-5 .75 at FP .002/.010/.019)
THRESHOLD = 0.85


def load(sets, half):
    rows = [json.loads(l) for l in open(f"{sets}/{half}.jsonl")]
    embs = [json.loads(l)["windows"] for l in open(f"{sets}/{half}.emb.jsonl")]
    assert len(rows) == len(embs), "embeddings do not match rows"
    return rows, embs


def fit(x, y):
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    pos = y.sum()
    w_s = np.where(y == 1, n / (2 * pos), n / (2 * (n - pos)))
    w = np.zeros(d + 1)
    for _ in range(50):
        z = xb @ w
        p = 1 / (1 + np.exp(-z))
        g = xb.T @ (w_s * (p - y)) / n + L2 * np.r_[w[:-1], 0]
        h = (xb.T * (w_s * p * (1 - p))) @ xb / n + L2 * np.diag(np.r_[np.ones(d), 0])
        step = np.linalg.solve(h, g)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w[:-1], w[-1]


def train(sets):
    rows, embs = load(sets, "dev")
    xs, ys = [], []
    for r, ws in zip(rows, embs):
        for e in ws:
            xs.append(e)
            ys.append(r["label"])
    x, y = np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64)
    w, b = fit(x, y)
    p = 1 / (1 + np.exp(-(x @ w + b)))
    acc = ((p >= 0.5) == (y == 1)).mean()
    print(f"dev windows: {len(y)} ({int(y.sum())} positive), training accuracy {acc:.3f}", file=sys.stderr)
    json.dump({
        "trained_on": f"dev halves (split.md): {len(rows)} rows, {len(y)} windows; scripts/train_head.py, L2={L2}",
        "weights": [round(float(v), 6) for v in w],
        "bias": round(float(b), 6),
    }, sys.stdout)


def report(sets, fast_path=None):
    head = json.load(open(sys.path[0] + "/../src/head.json"))
    w, b = np.array(head["weights"]), head["bias"]
    out = {}
    for half in ("dev", "eval"):
        rows, embs = load(sets, half)
        scores = [max((1 / (1 + np.exp(-(np.array(e) @ w + b))) for e in ws), default=0.0) for ws in embs]
        fast = None
        if half == "eval" and fast_path:
            fast = [json.loads(l)["flagged"] for l in open(fast_path)]
        out[half] = (rows, scores, fast)
    for half, (rows, scores, fast) in out.items():
        print(f"\n## {half} (threshold {THRESHOLD})")
        by = collections.defaultdict(lambda: [0, 0, 0, 0, 0])  # n, guard hits, fast hits, either, label
        for i, (r, s) in enumerate(zip(rows, scores)):
            key = (r["source"], r["category"])
            c = by[key]
            c[0] += 1
            c[1] += s >= THRESHOLD
            f = bool(fast[i]) if fast else False
            c[2] += f
            c[3] += f or s >= THRESHOLD
            c[4] = r["label"]
        print("| source | category | label | rows | guard | fast path | both |")
        print("|---|---|---|---|---|---|---|")
        for (src, cat), (n, g, f, e, lab) in sorted(by.items(), key=lambda kv: (kv[1][4], kv[0])):
            print(f"| {src} | {cat} | {'attack' if lab else 'benign'} | {n} | {g} | {f if fast else '-'} | {e if fast else '-'} |")
        for name, flag in (("guard", lambda i: scores[i] >= THRESHOLD),
                           ("fast path", lambda i: bool(fast[i]) if fast else None),
                           ("fast path + guard", lambda i: (bool(fast[i]) or scores[i] >= THRESHOLD) if fast else None)):
            if flag(0) is None:
                continue
            tp = sum(1 for i, r in enumerate(rows) if r["label"] and flag(i))
            fp = sum(1 for i, r in enumerate(rows) if not r["label"] and flag(i))
            pos = sum(r["label"] for r in rows)
            neg = len(rows) - pos
            prec = tp / (tp + fp) if tp + fp else 0.0
            print(f"\n{name}: recall {tp}/{pos} = {tp / pos:.3f}, FP rate {fp}/{neg} = {fp / neg:.3f}, precision {prec:.3f}")


if __name__ == "__main__":
    if "--eval" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--eval"]
        report(rest[0], rest[1] if len(rest) > 1 else None)
    else:
        train(sys.argv[1])

"""Trains the guard's logistic head on the dev half only, and scores the eval half.

    python scripts/train_head.py SETS_DIR [DEV_FASTPATH] > src/head.json   # train (dev only)
    python scripts/train_head.py SETS_DIR --eval [EVAL_FASTPATH]           # report on eval

SETS_DIR holds dev.jsonl / eval.jsonl (scripts/build_sets.py) and dev.emb.jsonl /
eval.emb.jsonl (from `cargo run --release --example embed`: every SPAN_TOKENS-token span of
every window, pooled from the window's last hidden states, and the window's context vector;
the head reads [span, context]).
A FASTPATH file is JSON lines with {"flagged": bool} per row of that half (the scanner's
verdict, `bulwark scan --as response`). Needs numpy. Deterministic: no random seeds.

Training is multiple-instance: a row is a bag of spans and its label says only that *some*
span of an attack row holds the attack (a BIPIA positive is an e-mail excerpt with one
inserted instruction). Every span of a benign row is a negative; each attack row
contributes its highest-scoring span as the positive, re-chosen after each fit (the first
fit uses the mean of the row's spans). The model is L2-regularised logistic regression
fitted by Newton's method, classes weighted to equal mass.

The operating point is chosen on dev only: 5-fold out-of-fold scores (rows i % 5), and the
lowest threshold at which the guard adds at most MAX_ADDED_FP to the fast path's
false-positive rate on dev (the fast path's own dev verdicts when DEV_FASTPATH is given;
otherwise the guard alone is held to that rate). The bias is then shifted so that this
threshold reads 0.85, the policy's default `guard.threshold`.
"""
import collections
import json
import math
import sys

import numpy as np

L2 = 1e-4  # kept from the first head (5-fold CV on dev)
MIL_ROUNDS = 3
MAX_ADDED_FP = 0.002  # the fast path's own dev FP rate is 0.2 %
THRESHOLD = 0.85


def load(sets, half):
    """Rows and, per row, the head's inputs: one [span, window context] line per span."""
    rows = [json.loads(l) for l in open(f"{sets}/{half}.jsonl")]
    spans = []
    for l in open(f"{sets}/{half}.emb.jsonl"):
        feats = [np.hstack([s, w["context"]]) for w in json.loads(l)["windows"] for s in w["spans"]]
        spans.append(np.array(feats, dtype=np.float64).reshape(-1, 768))
    assert len(rows) == len(spans), "embeddings do not match rows"
    return rows, spans


def fit(x, y, sw=None):
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    pos = y.sum()
    w_s = np.where(y == 1, n / (2 * pos), n / (2 * (n - pos)))
    if sw is not None:
        w_s = w_s * sw
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


def row_scores(spans, w, b):
    return np.array([float((s @ w + b).max()) if len(s) else -50.0 for s in spans])


def train_mil(rows, spans):
    neg = np.vstack([s for r, s in zip(rows, spans) if not r["label"] and len(s)])
    pos_bags = [s for r, s in zip(rows, spans) if r["label"] and len(s)]
    chosen = np.array([p.mean(axis=0) for p in pos_bags])
    for _ in range(MIL_ROUNDS):
        x = np.vstack([neg, chosen])
        y = np.r_[np.zeros(len(neg)), np.ones(len(chosen))]
        w, b = fit(x, y)
        chosen = np.array([p[np.argmax(p @ w)] for p in pos_bags])
    return w, b, len(neg), len(chosen)


def fast_verdicts(path, n):
    if not path:
        return np.zeros(n, dtype=bool)
    v = np.array([bool(json.loads(l)["flagged"]) for l in open(path)])
    assert len(v) == n, "fast-path verdicts do not match rows"
    return v


def train(sets, dev_fast=None):
    rows, spans = load(sets, "dev")
    labels = np.array([r["label"] for r in rows], dtype=bool)
    fast = fast_verdicts(dev_fast, len(rows))
    # Out-of-fold logits on dev, for the operating point only.
    oof = np.zeros(len(rows))
    for k in range(5):
        tr = [i for i in range(len(rows)) if i % 5 != k]
        te = [i for i in range(len(rows)) if i % 5 == k]
        w, b, _, _ = train_mil([rows[i] for i in tr], [spans[i] for i in tr])
        oof[te] = row_scores([spans[i] for i in te], w, b)
    neg = ~labels
    base_fp = (fast & neg).sum() / neg.sum()
    allowed = base_fp + MAX_ADDED_FP if dev_fast else MAX_ADDED_FP
    cut = None
    for z in sorted(set(oof[neg])) + [math.inf]:
        # Flag when logit > z: the lowest cut whose FP (with the fast path) is allowed.
        flag = oof > z
        fp = ((flag | fast) & neg).sum() / neg.sum() if dev_fast else (flag & neg).sum() / neg.sum()
        if fp <= allowed:
            cut = z
            break
    rec = ((oof > cut) | fast)[labels].mean()
    print(f"dev out-of-fold: cut logit {cut:.3f}; fast path FP {base_fp:.4f}, allowed {allowed:.4f}; "
          f"recall with the guard {rec:.3f} (fast path alone {fast[labels].mean():.3f})", file=sys.stderr)
    w, b, nneg, npos = train_mil(rows, spans)
    # Shift the bias so that logit == cut reads as THRESHOLD.
    b_shift = b - cut + math.log(THRESHOLD / (1 - THRESHOLD))
    print(f"dev spans: {nneg} negative, {npos} positive (one per attack row)", file=sys.stderr)
    json.dump({
        "trained_on": (f"dev halves (split.md): {len(rows)} rows; spans, multiple-instance, "
                       f"{MIL_ROUNDS} rounds; operating point from 5-fold out-of-fold dev scores "
                       f"(fast path + {MAX_ADDED_FP:.1%} FP) mapped to {THRESHOLD}; "
                       f"scripts/train_head.py, L2={L2}"),
        "weights": [round(float(v), 6) for v in w],
        "bias": round(float(b_shift), 6),
    }, sys.stdout)


def lang_of(row):
    # CyberSecEval spells its one language "English"; the other sources say "en".
    lang = row.get("lang", "en")
    return "en" if lang == "English" else lang


def pct(a, b):
    return f"{a}/{b} = {100 * a / b:.1f} %" if b else "-"


def report(sets, fast_path=None):
    head = json.load(open(sys.path[0] + "/../src/head.json"))
    w, b = np.array(head["weights"]), head["bias"]
    z = math.log(THRESHOLD / (1 - THRESHOLD))
    for half in ("dev", "eval"):
        rows, spans = load(sets, half)
        guard = row_scores(spans, w, b) >= z
        fast = fast_verdicts(fast_path, len(rows)) if (half == "eval" and fast_path) else None
        print(f"\n## {half} (threshold {THRESHOLD})\n")
        have = fast is not None
        print("| source | category | lang | label | rows | guard | fast path | both |")
        print("|---|---|---|---|---|---|---|---|")
        by = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
        for i, r in enumerate(rows):
            c = by[(r["label"], r["source"], r["category"], lang_of(r))]
            f = bool(fast[i]) if have else False
            c[0] += 1
            c[1] += guard[i]
            c[2] += f
            c[3] += f or guard[i]
        for (lab, src, cat, lang), (n, g, f, e, _) in sorted(by.items()):
            print(f"| {src} | {cat} | {lang} | {'attack' if lab else 'benign'} | {n} | {g} | "
                  f"{f if have else '-'} | {e if have else '-'} |")
        labels = np.array([r["label"] for r in rows], dtype=bool)
        langs = sorted({lang_of(r) for r in rows})
        print()
        print("| | recall | FP rate | precision |")
        print("|---|---|---|---|")
        variants = [("guard alone", guard)]
        if have:
            variants = [("fast path alone", fast), ("guard alone", guard), ("fast path + guard", fast | guard)]
        for name, flag in variants:
            tp, fp = (flag & labels).sum(), (flag & ~labels).sum()
            prec = f"{100 * tp / (tp + fp):.1f} %" if tp + fp else "-"
            print(f"| {name} | {pct(tp, labels.sum())} | {pct(fp, (~labels).sum())} | {prec} |")
        if len(langs) > 1:
            print("\nrecall per language (attack rows):\n")
            print("| lang | attacks | " + " | ".join(n for n, _ in variants) + " |")
            print("|---|---|" + "---|" * len(variants))
            for lang in langs:
                m = labels & np.array([lang_of(r) == lang for r in rows])
                print(f"| {lang} | {m.sum()} | " + " | ".join(pct((f & m).sum(), m.sum()) for _, f in variants) + " |")


if __name__ == "__main__":
    if "--eval" in sys.argv:
        rest = [a for a in sys.argv[1:] if a != "--eval"]
        report(rest[0], rest[1] if len(rest) > 1 else None)
    else:
        train(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)

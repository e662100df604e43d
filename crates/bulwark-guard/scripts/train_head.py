"""Trains the guard's logistic head on the dev half only, picks its threshold on dev, and
reports on the eval half.

    python scripts/train_head.py train SETS EMB > src/head_static.json   # EMB: emb | enc
    python scripts/train_head.py eval  SETS EMB src/head_static.json [HALF...]  # report (markdown)

SETS holds dev.jsonl / eval.jsonl (scripts/build_sets.py), their window embeddings
SETS/{dev,eval}.EMB.jsonl (`embed MODEL_DIR static|encoder`), and the fast path's verdicts
SETS/{dev,eval}.fast.jsonl (`examples/fastpath`), one {"flagged": bool} a row.
Needs numpy. Deterministic: L2-regularised logistic regression fitted by Newton's method
(convex; no seeds), classes weighted to equal mass, folds by row index.

Every window of a row carries the row's label (training positives are built one window
long, so the window holds the attack); a row's score is the maximum over its windows, as
in production.

Operating point, chosen on dev only from 5-fold out-of-fold scores: the lowest threshold
at which the guard *alone* flags no larger a share of dev's benign rows than the fast path
does ("at the fast path's false-positive rate"). The L2 strength is the one of L2_GRID
with the best out-of-fold dev recall at that point. The head's bias is then shifted so
that this threshold reads as policy's default 0.85, and the head is fitted on all of dev.
"""
import collections
import json
import sys

import numpy as np

L2_GRID = (1e-4, 1e-5, 1e-6, 1e-7)
POLICY_THRESHOLD = 0.85
FOLDS = 5
MI_ROUNDS = 2


def guard_input(r):
    """Whether a row is text the guard is given in production: a tool result, a tool
    definition or an attack. A user's own prompt (BFCL questions, CyberSecEval's benign
    MITRE prompts, MCPSecBench's ordinary requests: scope `request`, benign) never reaches
    the guard — it reads tool results, definitions and tool input — and as a negative it
    teaches the head that text addressed to the assistant is harmless, which in a tool
    result is the very signal of an injection."""
    return r["label"] or r.get("scope") != "request"


def load(sets, half, emb, only_guard_input=False):
    rows = [json.loads(l) for l in open(f"{sets}/{half}.jsonl")]
    embs = [json.loads(l)["windows"] for l in open(f"{sets}/{half}.{emb}.jsonl")]
    fast = [json.loads(l)["flagged"] for l in open(f"{sets}/{half}.fast.jsonl")]
    assert len(rows) == len(embs) == len(fast), "embeddings or verdicts do not match rows"
    if only_guard_input:
        keep = [i for i, r in enumerate(rows) if guard_input(r)]
        rows, embs, fast = [rows[i] for i in keep], [embs[i] for i in keep], [fast[i] for i in keep]
    return rows, embs, np.array(fast, dtype=bool)


def windows(rows, embs, idx, pick=None):
    """Training windows: every window of a benign row; of an attack row, every window, or
    with `pick` (row -> window index) only the one it names (multiple-instance)."""
    xs, ys = [], []
    for i in idx:
        for j, e in enumerate(embs[i]):
            if pick is not None and rows[i]["label"] and j != pick[i]:
                continue
            xs.append(e)
            ys.append(rows[i]["label"])
    return np.array(xs, dtype=np.float64), np.array(ys, dtype=np.float64)


def fit_mi(rows, embs, idx, l2):
    """Multiple-instance fit: a short window of an attack row need not hold the attack, so
    after a first fit on all windows each attack row keeps only its highest-scoring window,
    re-chosen over MI_ROUNDS refits."""
    w, b = fit(*windows(rows, embs, idx), l2)
    for _ in range(MI_ROUNDS):
        pick = {i: int(np.argmax([np.dot(e, w) for e in embs[i]])) for i in idx if rows[i]["label"] and embs[i]}
        w, b = fit(*windows(rows, embs, idx, pick), l2)
    return w, b


def fit(x, y, l2):
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    pos = y.sum()
    w_s = np.where(y == 1, n / (2 * pos), n / (2 * (n - pos)))
    w = np.zeros(d + 1)
    for _ in range(50):
        z = xb @ w
        p = 1 / (1 + np.exp(-z))
        g = xb.T @ (w_s * (p - y)) / n + l2 * np.r_[w[:-1], 0]
        h = (xb.T * (w_s * p * (1 - p))) @ xb / n + l2 * np.diag(np.r_[np.ones(d), 0])
        step = np.linalg.solve(h, g)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w[:-1], w[-1]


def row_logits(embs, idx, w, b):
    """Max window logit per row (monotone in the probability, so thresholds carry over)."""
    return np.array([max((float(np.dot(e, w) + b) for e in embs[i]), default=-1e9) for i in idx])


def oof_logits(rows, embs, l2):
    n = len(rows)
    out = np.zeros(n)
    for k in range(FOLDS):
        test = [i for i in range(n) if i % FOLDS == k]
        train = [i for i in range(n) if i % FOLDS != k]
        w, b = fit_mi(rows, embs, train, l2)
        out[test] = row_logits(embs, test, w, b)
    return out


def pick(logits, labels, fast):
    """Lowest logit cut at which the guard alone has at most the fast path's FP count."""
    neg = labels == 0
    budget = int((fast & neg).sum())
    neg_scores = np.sort(logits[neg])[::-1]
    # Flag strictly above the (budget+1)-th highest benign score.
    cut = neg_scores[budget] if budget < len(neg_scores) else -1e9
    return float(np.nextafter(cut, np.inf))


def lang_of(r):
    """CyberSecEval spells languages out; the other sources use ISO codes."""
    v = r.get("lang", "en")
    return {"English": "en"}.get(v, v)


def rates(flag, labels):
    pos, neg = labels == 1, labels == 0
    tp, fp = int((flag & pos).sum()), int((flag & neg).sum())
    prec = tp / (tp + fp) if tp + fp else 0.0
    return tp, int(pos.sum()), fp, int(neg.sum()), prec


def fmt(name, flag, labels):
    tp, p, fp, n, prec = rates(flag, labels)
    return f"| {name} | {tp}/{p} = {100 * tp / p:.1f} % | {fp}/{n} = {100 * fp / n:.1f} % | {100 * prec:.1f} % |"


def train(sets, emb, only_guard_input=False):
    rows, embs, fast = load(sets, "dev", emb, only_guard_input)
    labels = np.array([r["label"] for r in rows])
    best = None
    for l2 in L2_GRID:
        oof = oof_logits(rows, embs, l2)
        cut = pick(oof, labels, fast)
        tp, p, fp, n, _ = rates(oof >= cut, labels)
        print(f"L2={l2}: out-of-fold dev recall {tp}/{p} at FP {fp}/{n} (cut {cut:.3f})", file=sys.stderr)
        if best is None or tp > best[0]:
            best = (tp, l2, cut)
    _, l2, cut = best
    w, b = fit_mi(rows, embs, range(len(rows)), l2)
    # Shift the bias so that logit == cut reads as POLICY_THRESHOLD.
    target = np.log(POLICY_THRESHOLD / (1 - POLICY_THRESHOLD))
    b = b - cut + target
    json.dump({
        "trained_on": f"dev halves (split.md): {len(rows)} rows; scripts/train_head.py, L2={l2}, "
                      f"0.85 = out-of-fold dev cut at the fast path's dev FP rate",
        "weights": [round(float(v), 6) for v in w],
        "bias": round(float(b), 6),
    }, sys.stdout)


def report(sets, emb, head_path, halves=("dev", "eval")):
    head = json.load(open(head_path))
    w, b = np.array(head["weights"]), head["bias"]
    cut = float(np.log(POLICY_THRESHOLD / (1 - POLICY_THRESHOLD)))
    for half in halves:
        rows, embs, fast = load(sets, half, emb)
        labels = np.array([r["label"] for r in rows])
        logits = row_logits(embs, range(len(rows)), w, b)
        guard = logits >= cut
        print(f"\n### {half} (guard at 0.85{'; dev is in-sample for the head' if half == 'dev' else ''})\n")
        print("| | recall | FP rate | precision |\n|---|---|---|---|")
        print(fmt("fast path alone", fast, labels))
        print(fmt("guard alone", guard, labels))
        print(fmt("fast path + guard", fast | guard, labels))
        if half != "dev":
            # After the fact, on eval (no choice is made from it): the best the guard could
            # do at exactly the fast path's eval FP count, alone and added to the fast path.
            neg = labels == 0
            budget = int((fast & neg).sum())
            s = np.sort(logits[neg])[::-1]
            c = np.nextafter(s[budget], np.inf) if budget < len(s) else -1e9
            print(fmt("guard alone, cut on eval at the fast path's FP (oracle)", logits >= c, labels))
            extra = logits[neg & ~fast]
            s2 = np.sort(extra)[::-1]
            c2 = np.nextafter(s2[0], np.inf) if len(s2) else -1e9
            print(fmt("fast path + guard adding no FP (oracle cut)", fast | (logits >= c2), labels))
            print(f"\nAUC of the guard's row score on eval: {auc(logits, labels):.3f}")
        print(f"\n<details><summary>{half}: per source, category and language</summary>\n")
        print("| source | category | lang | label | rows | guard | fast path | both |")
        print("|---|---|---|---|---|---|---|---|")
        by = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
        for i, r in enumerate(rows):
            c = by[(r["source"], r["category"], lang_of(r))]
            c[0] += 1
            c[1] += bool(guard[i])
            c[2] += bool(fast[i])
            c[3] += bool(guard[i] or fast[i])
            c[4] = r["label"]
        for (src, cat, lang), (n, g, f, e, lab) in sorted(by.items(), key=lambda kv: (kv[1][4], kv[0])):
            print(f"| {src} | {cat} | {lang} | {'attack' if lab else 'benign'} | {n} | {g} | {f} | {e} |")
        langs = collections.defaultdict(lambda: [0, 0, 0, 0, 0, 0, 0, 0])
        for i, r in enumerate(rows):
            c = langs[lang_of(r)]
            k = 0 if r["label"] else 4
            c[k] += 1
            c[k + 1] += bool(guard[i])
            c[k + 2] += bool(fast[i])
            c[k + 3] += bool(guard[i] or fast[i])
        print("\n| language | attacks | guard | fast path | both | benign | guard FP | fast path FP | both FP |")
        print("|---|---|---|---|---|---|---|---|---|")
        for code, c in sorted(langs.items()):
            print(f"| {code} | " + " | ".join(str(x) for x in c) + " |")
        print("\n</details>")


def auc(scores, labels):
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "train":
        # `--guard-input`: train and pick the cut only on what the guard reads (guard_input).
        train(sys.argv[2], sys.argv[3], "--guard-input" in sys.argv[4:])
    elif cmd == "eval":
        # Optional halves after the head (default dev eval): e.g. `ml` for multilingual.py's set.
        report(sys.argv[2], sys.argv[3], sys.argv[4], tuple(sys.argv[5:]) or ("dev", "eval"))
    else:
        sys.exit(__doc__)

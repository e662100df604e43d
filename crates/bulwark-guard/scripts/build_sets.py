"""Builds the guard's dev and eval sets from the project's one dev/eval split.

    python scripts/build_sets.py SPLIT OUT_DIR

SPLIT is crates/bulwark-scan/tests/data/split (materialised from the shared corpora and the
bfcl-eval wheel by scripts/dev/materialise_split.py; its README names every source). Writes
OUT_DIR/dev.jsonl (training: the head sees only this) and OUT_DIR/eval.jsonl (held back),
one {text, label, source, category, lang, scope} a line. Deterministic (seeded).

The split is by source, never by row, and its labels are the project's: an MCPSecBench
prompt is an attack only in the Malicious Prompt and Indirect Prompt Injection families
(the other families' prompts are ordinary user requests to a tool-using assistant), a
tool definition is an attack only when poisoned. `scope` is where the text travels
(request: tool input or a prompt; response: a tool result; definition), which is how the
fast path scans it (`examples/fastpath.rs`).

  - dev: split/dev/injection.jsonl; split/dev/poisoning.jsonl's poisoned definitions and
    300 of its benign ones; and, so that "an e-mail" is not what the head learns as the
    attack class (BIPIA's positives are attacks inside e-mails), the clean dev e-mails'
    paragraphs and one 500-character excerpt of a clean dev e-mail per BIPIA attack.
  - eval: split/eval/injection.jsonl, split/eval/agentdojo.jsonl (AgentDojo tool outputs
    from its ground-truth pipeline, with and without attacks), 400 of
    split/eval/poisoning.jsonl's benign definitions.

A definition's text is its strings joined by newlines, as the gate gives it to the guard.
"""
import json
import os
import random
import sys

rng = random.Random(25)


def strings(v, out):
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, list):
        for x in v:
            strings(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            strings(x, out)
    return out


def read(path):
    return [json.loads(line) for line in open(path)]


def row(r, text=None, label=None, category=None):
    return {
        "text": r["text"] if text is None else text,
        "label": int(r["label"] if label is None else label),
        "source": r["source"],
        "category": category or f"{r['source']}: {r['family']}",
        "lang": r.get("lang", "en"),
        "scope": r.get("scope", "response"),
    }


def definition(r):
    d = r.get("definition")
    return row(r, text="\n".join(strings(d, [])) if d else r["text"])


def snippet(text, n=500):
    if len(text) <= n:
        return text
    start = rng.randrange(0, len(text) - n)
    return text[start:start + n]


def dev(split):
    rows = read(f"{split}/dev/injection.jsonl")
    out = [row(r) for r in rows]
    clean = [r for r in rows if r["source"] == "bipia" and not r["label"]]
    attacks = sum(1 for r in rows if r["source"] == "bipia" and r["label"])
    for r in clean:
        for part in r["text"].split("\n\n"):
            if len(part) > 80:
                out.append(row(r, text=part, category="bipia: e-mail paragraph (clean)"))
    for _ in range(attacks):
        r = rng.choice(clean)
        out.append(row(r, text=snippet(r["text"]), category="bipia: e-mail excerpt (clean)"))
    defs = read(f"{split}/dev/poisoning.jsonl")
    out += [definition(r) for r in defs if r["label"]]
    benign = [r for r in defs if not r["label"]]
    out += [definition(r) for r in rng.sample(benign, min(300, len(benign)))]
    return out


def eval_(split):
    out = [row(r) for r in read(f"{split}/eval/injection.jsonl")]
    out += [row(r) for r in read(f"{split}/eval/agentdojo.jsonl")]
    defs = [r for r in read(f"{split}/eval/poisoning.jsonl") if not r["label"]]
    out += [definition(r) for r in rng.sample(defs, min(400, len(defs)))]
    return out


def main():
    split, out_dir = sys.argv[1:3]
    os.makedirs(out_dir, exist_ok=True)
    for half, make in (("dev", dev), ("eval", eval_)):
        # One seed per half: changing how dev rows are made never changes the eval rows.
        rng.seed(f"guard-{half}")
        rows = make(split)
        with open(f"{out_dir}/{half}.jsonl", "w") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        pos = sum(r["label"] for r in rows)
        print(f"{half}: {len(rows)} rows, {pos} positive", file=sys.stderr)


if __name__ == "__main__":
    main()

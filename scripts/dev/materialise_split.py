"""Materialises the shared dev/eval split (`/work/notes/split.md`) as JSON Lines under
`crates/bulwark-scan/tests/data/split/{dev,eval}/`, so tests run without `../shared`.

The split is by SOURCE, never by row: rules are written looking only at `dev/`; `eval/` is
scored only when asked (`EVAL=1`). This script copies rows mechanically and never prints
them. Every row: {id, source, family, lang, scope, label, text} (poisoning rows carry a
`definition` object instead of or beside `text`; secret rows may carry `file_extension`).
`label` is true for an attack / a secret / a poisoned definition.

Usage: python3 scripts/dev/materialise_split.py SHARED_CORPORA_DIR BFCL_WHEEL_DIR
  (BFCL_WHEEL_DIR: the unpacked `bfcl-eval` wheel from PyPI, Apache-2.0)
"""

import gzip
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "crates", "bulwark-scan", "tests", "data", "split")


def lang_of(text):
    """Language by script, then by a few function words for Latin-script text. Only used to
    group rows in the report; never a detection feature."""
    counts = {}
    for ch in text:
        o = ord(ch)
        if 0x3040 <= o <= 0x30FF:
            k = "ja"
        elif 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF:
            k = "ko"
        elif 0x4E00 <= o <= 0x9FFF:
            k = "zh"
        elif 0x0400 <= o <= 0x04FF:
            k = "ru"
        elif 0x0600 <= o <= 0x06FF:
            k = "ar"
        elif 0x0900 <= o <= 0x097F:
            k = "hi"
        else:
            continue
        counts[k] = counts.get(k, 0) + 1
    if counts.get("ja"):
        return "ja"
    if counts:
        k = max(counts, key=counts.get)
        if counts[k] >= 5:
            return k
    words = re.findall(r"[a-zà-ÿ]+", text.lower())
    marks = {
        "es": {"el", "los", "las", "que", "por", "para", "una", "está", "usted", "todas"},
        "fr": {"le", "les", "des", "est", "vous", "une", "pour", "avec", "toutes", "et"},
        "de": {"der", "die", "das", "und", "ist", "nicht", "sie", "ein", "eine", "alle"},
        "pt": {"os", "não", "você", "uma", "para", "com", "todas", "são", "ao"},
        "it": {"il", "gli", "che", "non", "una", "per", "sono", "tutte", "della"},
        "en": {"the", "and", "is", "you", "to", "of", "a", "all", "your", "with"},
    }
    score = {k: sum(w in v for w in words) for k, v in marks.items()}
    best = max(score, key=score.get)
    return best if score[best] > score["en"] else "en"


def write(half, name, rows):
    os.makedirs(os.path.join(OUT, half), exist_ok=True)
    with open(os.path.join(OUT, half, name), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def row(rid, source, family, scope, label, text, **extra):
    r = {"id": rid, "source": source, "family": family, "lang": lang_of(text), "scope": scope,
         "label": label, "text": text}
    r.update(extra)
    return r


def bipia(corp, half):
    """BIPIA's recipe: each attack inserted at the start, middle or end of a clean e-mail.
    Dev: *_attack_train x e-mails 0-24; eval: *_attack_test x e-mails 25-49."""
    emails = [json.loads(l)["context"] for l in open(os.path.join(corp, "injection/bipia/email_test.jsonl")) if l.strip()]
    hosts = emails[:25] if half == "dev" else emails[25:50]
    suffix = "train" if half == "dev" else "test"
    rows = [row(f"bipia-clean-{i}", "bipia", "clean e-mail", "response", False, e) for i, e in enumerate(hosts)]
    n = 0
    for kind in ("text", "code"):
        attacks = json.load(open(os.path.join(corp, f"injection/bipia/{kind}_attack_{suffix}.json")))
        for cat in sorted(attacks):
            for a in attacks[cat]:
                for j in range(3):
                    e = hosts[(n * 3 + j) % len(hosts)]
                    mid = len(e) // 2
                    text = [f"{a}\n{e}", f"{e[:mid]}\n{a}\n{e[mid:]}", f"{e}\n{a}"][j]
                    rows.append(row(f"bipia-{kind}-{n}-{j}", "bipia", cat, "response", True, text))
                n += 1
    return rows


def cyberseceval(corp, half):
    pi = json.load(open(os.path.join(corp, "injection/cyberseceval/prompt_injection.json")))
    variants = sorted({r["injection_variant"] for r in pi})
    keep = {v for i, v in enumerate(variants) if (i % 2 == 0) == (half == "dev")}
    rows = []
    for r in pi:
        if r["injection_variant"] in keep:
            scope = "response" if r["injection_type"] == "indirect" else "request"
            rows.append(row(f"cse-{r['prompt_id']}", "cyberseceval", r["injection_variant"], scope, True, r["user_input"]))
    frr = json.load(open(os.path.join(corp, "injection/cyberseceval/mitre_frr_benign.json")))
    types = sorted({r["attack_type"] for r in frr})
    keep_t = {t for i, t in enumerate(types) if (i % 2 == 0) == (half == "dev")}
    for i, r in enumerate(frr):
        if r["attack_type"] in keep_t:
            rows.append(row(f"mitre-{i}", "cyberseceval-mitre-benign", r["attack_type"], "request", False, r["mutated_prompt"]))
    return rows


ATTACK_FAMILIES = {"Malicious Prompt", "Indirect Prompt Injection"}


def mcpsecbench(corp, half):
    files = ["attacks.json", "attacks_updated.json"] if half == "dev" else ["attacks_extended.json"]
    inj, poison = [], []
    for fname in files:
        for fam in json.load(open(os.path.join(corp, "mcp/mcpsecbench", fname))):
            name = fam["name"]
            for k, p in enumerate(fam.get("prompts", [])):
                # In the other families the attack sits in the server; the prompts are
                # ordinary user requests (negatives).
                inj.append(row(f"mcpsb-{fname}-{name}-{k}", "mcpsecbench", name, "request", name in ATTACK_FAMILIES, p))
            mp = fam.get("malicious_prompt", "").strip()
            if mp:
                d = {"name": re.sub(r"\W+", "_", name.lower()), "description": "Reads a file. " + mp,
                     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}
                poison.append(row(f"mcpsb-def-{name}", "mcpsecbench", name, "definition", True, mp, definition=d))
    return inj, poison


def bfcl(wheel, half, cap_defs=1500, cap_questions=1000):
    """Benign function definitions (poisoning negatives) and user questions (request
    negatives), split by source file: sorted file names, even index = dev, odd = eval."""
    data = os.path.join(wheel, "bfcl_eval", "data")
    files = sorted(f for f in os.listdir(data) if f.startswith("BFCL_v4_") and f.endswith(".json"))
    files = [f for i, f in enumerate(files) if (i % 2 == 0) == (half == "dev")]
    defs, qs, seen = [], [], set()
    for f in files:
        fam = f[len("BFCL_v4_"):-len(".json")]
        raw = open(os.path.join(data, f), encoding="utf-8").read()
        try:
            items = [json.loads(l) for l in raw.splitlines() if l.strip()]
        except json.JSONDecodeError:
            # One file is a single JSON document rather than JSON Lines.
            whole = json.loads(raw)
            items = whole if isinstance(whole, list) else []
        for r in items:
            if not isinstance(r, dict):
                continue
            for fn in r.get("function") or []:
                key = json.dumps(fn, sort_keys=True)
                if key in seen or len(defs) >= cap_defs:
                    continue
                seen.add(key)
                defs.append(row(f"bfcl-def-{len(defs)}", "bfcl", fam, "definition", False,
                                fn.get("description", ""), definition=fn))
            q = r.get("question")
            if q and len(qs) < cap_questions and isinstance(q[0], list) and q[0]:
                turn = q[0][-1]
                if isinstance(turn, dict) and isinstance(turn.get("content"), str):
                    qs.append(row(f"bfcl-q-{r['id']}", "bfcl", fam, "request", False, turn["content"]))
    return defs, qs


def secrets(corp, half):
    rows = []
    if half == "dev":
        with gzip.open(os.path.join(corp, "secrets/gitleaks_rule_samples.jsonl.gz"), "rt") as f:
            src = [json.loads(l) for l in f if l.strip()]
        pos = {r["text"] for r in src if r["label"] == "tp"}
        for i, r in enumerate(src):
            label = r["label"] == "tp"
            # A negative for one rule can be another rule's positive: it says nothing about
            # "is there a secret here".
            if not label and r["text"] in pos:
                continue
            rows.append(row(f"gitleaks-{i}", "gitleaks", r["rule_id"], "request", label, r["text"]))
    else:
        src = [json.loads(l) for l in open(os.path.join(corp, "secrets/detect_secrets_plugin_cases.jsonl")) if l.strip()]
        pos = {r["text"] for r in src if r["should_flag"]}
        for i, r in enumerate(src):
            label = bool(r["should_flag"])
            if not label and r["text"] in pos:
                continue
            extra = {"file_extension": r["file_extension"]} if r.get("file_extension") else {}
            rows.append(row(f"detect-secrets-{i}", "detect-secrets", r["plugin"], "request", label, r["text"], **extra))
    return rows


def main():
    corp, wheel = sys.argv[1], sys.argv[2]
    for half in ("dev", "eval"):
        inj, poison = mcpsecbench(corp, half)
        defs, qs = bfcl(wheel, half)
        write(half, "injection.jsonl", bipia(corp, half) + cyberseceval(corp, half) + inj + qs)
        write(half, "poisoning.jsonl", poison + defs)
        write(half, "secrets.jsonl", secrets(corp, half))
        print(half, "written")


if __name__ == "__main__":
    main()

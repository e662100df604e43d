#!/usr/bin/env python3
"""The definitions and user questions behind the benign BFCL calls (issue 26, item 5).

Usage: python3 scripts/dev/bfcl_tools.py BFCL_WHEEL_DIR crates/bulwark-engine/tests/data/benign
  (BFCL_WHEEL_DIR: the unpacked `bfcl-eval` wheel from PyPI, Apache-2.0;
   the data folder holds bfcl_calls.jsonl, made by bfcl_calls.py; writes bfcl_tools.jsonl and
   bfcl_sessions.jsonl beside it)

`bfcl_calls.jsonl` holds the calls; this adds what a gateway sees around them, one row per
BFCL question (= one session): the user's own messages, in order, and the definition of every
tool the session calls, as the model was given it (`function` of a single-turn question; the
`multi_turn_func_doc` of the question's classes for a multi-turn one). Only tools the calls
use are kept, so nothing here repeats the calls file, and each distinct definition is written
once, in `bfcl_tools.jsonl` (`{key, name, description, parameters}`, the key a digest of the
rest); `bfcl_sessions.jsonl` rows are `{session, user: [text…], tools: {name: key}}`.
"""

import hashlib
import json
import os
import sys


def user_texts(question):
    out = []
    for turn in question or []:
        for m in turn if isinstance(turn, list) else [turn]:
            if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str):
                out.append(m["content"])
    return out


def main():
    root = os.path.join(sys.argv[1], "bfcl_eval", "data")
    called = {}
    order = []
    out = sys.argv[2]
    for line in open(os.path.join(out, "bfcl_calls.jsonl"), encoding="utf-8"):
        r = json.loads(line)
        s = r["id"].split("#")[0]
        if s not in called:
            called[s] = set()
            order.append(s)
        called[s].add(r["tool"])
    multi = {}
    docs = os.path.join(root, "multi_turn_func_doc")
    for f in sorted(os.listdir(docs)):
        for line in open(os.path.join(docs, f), encoding="utf-8"):
            if line.strip():
                d = json.loads(line)
                multi.setdefault(d["name"], d)
    questions = {}
    # The question files that have answers (the ones the calls come from).
    for f in sorted(os.listdir(os.path.join(root, "possible_answer"))):
        if not (f.startswith("BFCL_v4_") and f.endswith(".json")):
            continue
        for line in open(os.path.join(root, f), encoding="utf-8"):
            if line.strip():
                q = json.loads(line)
                if q["id"] in called:
                    questions[q["id"]] = q
    defs = {}
    sessions = open(os.path.join(out, "bfcl_sessions.jsonl"), "w", encoding="utf-8")
    for s in order:
        q = questions.get(s)
        if q is None:
            continue
        funcs = {d["name"]: d for d in q.get("function") or []}
        tools = {}
        for name in sorted(called[s]):
            d = funcs.get(name) or multi.get(name)
            if d is None:
                continue
            row = {"name": name, "description": d.get("description", ""),
                   "parameters": d.get("parameters", {})}
            text = json.dumps(row, ensure_ascii=False, sort_keys=True)
            key = hashlib.sha256(text.encode()).hexdigest()[:12]
            defs[key] = row
            tools[name] = key
        sessions.write(json.dumps({"session": s, "user": user_texts(q.get("question")),
                                   "tools": tools}, ensure_ascii=False, sort_keys=True) + "\n")
    with open(os.path.join(out, "bfcl_tools.jsonl"), "w", encoding="utf-8") as f:
        for key in sorted(defs):
            f.write(json.dumps({"key": key, **defs[key]}, ensure_ascii=False, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

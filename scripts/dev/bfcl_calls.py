#!/usr/bin/env python3
"""Benign tool calls from the Berkeley Function-Calling Leaderboard's ground truth.

Usage: python3 scripts/dev/bfcl_calls.py BFCL_WHEEL_DIR > crates/bulwark-engine/tests/data/benign/bfcl_calls.jsonl
  (BFCL_WHEEL_DIR: the unpacked `bfcl-eval` wheel from PyPI, Apache-2.0)

Every `possible_answer/BFCL_v4_*.json` file holds the calls a correct model makes for each
question. Single-turn files give `{function: {param: [accepted values…]}}`: the first
accepted value that is not the "omit it" marker (`""`) is taken, and a parameter whose only
choice is omitting it is left out. Multi-turn files give Python call strings
(`cd(folder='document')`), read with `ast`. The split follows the rest of the project's
(crates/bulwark-scan/tests/data/split/README.md): sorted file names, even index = dev, odd
= eval. A call repeated verbatim (same tool, same arguments) is kept once. Output: one JSON
object per line, `{id, family, half, tool, args}`.
"""

import ast
import json
import os
import sys


def first_value(choices):
    if not isinstance(choices, list):
        return True, choices
    for c in choices:
        if c != "":
            return True, c
    return False, None


def single(gt):
    for call in gt:
        if not isinstance(call, dict):
            continue
        for name, params in call.items():
            args = {}
            for k, v in (params or {}).items():
                ok, val = first_value(v)
                if ok:
                    args[k] = val
            yield name, args


def literal(node):
    try:
        return True, ast.literal_eval(node)
    except (ValueError, SyntaxError):
        return False, None


def multi(gt):
    for turn in gt:
        for text in turn if isinstance(turn, list) else []:
            try:
                expr = ast.parse(text, mode="eval").body
            except SyntaxError:
                continue
            if not isinstance(expr, ast.Call):
                continue
            name = ast.unparse(expr.func)
            args = {}
            good = True
            for i, a in enumerate(expr.args):
                ok, v = literal(a)
                good &= ok
                args[f"arg{i}"] = v
            for kw in expr.keywords:
                ok, v = literal(kw.value)
                good &= ok
                args[kw.arg] = v
            if good:
                yield name, args


def main():
    data = os.path.join(sys.argv[1], "bfcl_eval", "data", "possible_answer")
    files = sorted(f for f in os.listdir(data) if f.startswith("BFCL_v4_") and f.endswith(".json"))
    seen = set()
    for i, f in enumerate(files):
        half = "dev" if i % 2 == 0 else "eval"
        fam = f[len("BFCL_v4_"):-len(".json")]
        for line in open(os.path.join(data, f), encoding="utf-8"):
            if not line.strip():
                continue
            r = json.loads(line)
            gt = r.get("ground_truth") or []
            calls = multi(gt) if gt and isinstance(gt[0], list) else single(gt)
            for k, (name, args) in enumerate(calls):
                key = json.dumps([name, args], sort_keys=True)
                if key in seen:
                    continue
                seen.add(key)
                print(json.dumps({"id": f"{r['id']}#{k}", "family": fam, "half": half,
                                  "tool": name, "args": args}, ensure_ascii=False, sort_keys=True))


if __name__ == "__main__":
    main()

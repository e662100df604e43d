"""Scores capability inference against hand labels (scripts/infer/agentdojo-labels.tsv).

Usage: score.py LABELS.tsv INFERRED.tsv   (INFERRED from the infer_tools example)
Scored capabilities: exec.irreversible, msg.send, net.egress (the revocable ones; fs.* and
the like are not labelled). Prints per-tool mismatches and the totals."""
import sys

SCORED = {"exec.irreversible", "msg.send", "net.egress"}


def sets(s):
    return set() if s == "-" else set(s.split(","))


labels = {}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    name, caps, taint, _why = line.rstrip("\n").split("\t")
    labels[name] = (sets(caps), sets(taint))
got = {}
for line in open(sys.argv[2]):
    name, caps, taint, why = line.rstrip("\n").split("\t")
    got[name] = (sets(caps) & SCORED, sets(taint), why)

n = len(labels)
cap_exact = taint_exact = both = 0
danger = caught = false_alarm = benign = 0
for name, (lc, lt) in sorted(labels.items()):
    gc, gt, why = got.get(name, (set(), set(), "missing"))
    cap_exact += gc == lc
    taint_exact += gt == lt
    both += gc == lc and gt == lt
    if lc:
        danger += 1
        caught += bool(gc)
    else:
        benign += 1
        false_alarm += bool(gc)
    if gc != lc or gt != lt:
        print(f"MISMATCH {name}: labelled caps={sorted(lc)} taint={sorted(lt)}; "
              f"inferred caps={sorted(gc)} taint={sorted(gt)} [{why}]")
print(f"tools {n}; capabilities exact {cap_exact}/{n}; taint exact {taint_exact}/{n}; both {both}/{n}")
print(f"consequential tools given a revocable capability {caught}/{danger}; "
      f"other tools given one (false alarms) {false_alarm}/{benign}")

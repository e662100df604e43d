"""AgentDojo tool outputs, offline, for the eval half of the split (never read while writing
rules): every user task's ground-truth tool calls are run in AgentDojo's simulated
environment, once without injections (the clean outputs: negatives) and once per attack
with an injection task's goal planted by that attack (outputs that carry the attacker's
text: positives). No model runs; AgentDojo's own ground-truth pipeline produces the text a
model would read.

Usage: python scripts/dev/agentdojo_outputs.py OUT.jsonl   (in a venv with agentdojo==0.1.35)
Writes rows {id, source, family, lang, scope, label, text}; prints only counts.
"""

import json
import sys

from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
from agentdojo.attacks.attack_registry import load_attack
from agentdojo.functions_runtime import FunctionsRuntime
from agentdojo.task_suite.load_suites import get_suite

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from materialise_split import lang_of  # noqa: E402

SUITES = ["banking", "slack", "travel", "workspace"]
ATTACKS = ["important_instructions", "ignore_previous", "system_message", "injecagent", "direct", "tool_knowledge"]


class Target:
    """What an attack reads from the pipeline it targets: the model's name."""

    name = "gpt-4o-2024-05-13"


def outputs(suite, user_task, injections):
    env = suite.load_and_inject_default_environment(injections)
    runtime = FunctionsRuntime(suite.tools)
    _, _, _, messages, _ = GroundTruthPipeline(user_task).query(user_task.PROMPT, runtime, env)
    for m in messages:
        if m["role"] == "tool":
            yield " ".join(str(b.get("content") or "") for b in m["content"])


def main():
    out = open(sys.argv[1], "w", encoding="utf-8")
    seen = set()
    counts = {}
    for name in SUITES:
        suite = get_suite("v1.2", name)
        attacks = {a: load_attack(a, suite, Target()) for a in ATTACKS}
        injection_tasks = list(suite.injection_tasks.values())
        for k, ut in enumerate(suite.user_tasks.values()):
            clean = list(outputs(suite, ut, {}))
            for text in clean:
                if text.strip() and ("clean", text) not in seen:
                    seen.add(("clean", text))
                    row = {"id": f"agentdojo-{name}-{ut.ID}-clean-{len(seen)}", "source": "agentdojo",
                           "family": f"{name} / clean", "lang": lang_of(text), "scope": "response",
                           "label": False, "text": text}
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                    counts[(name, "clean")] = counts.get((name, "clean"), 0) + 1
            for j, (aname, attack) in enumerate(attacks.items()):
                # One injection task per (user task, attack), round robin: every goal is
                # used, and the set stays small.
                it = injection_tasks[(k + j) % len(injection_tasks)]
                injections = attack.attack(ut, it)
                planted = [v for v in injections.values() if v]
                if not planted:
                    continue
                for text in outputs(suite, ut, injections):
                    # The tool's own serialisation (YAML) may fold the planted text, so an
                    # output is a positive when it differs from every clean output.
                    if text not in clean and (aname, text) not in seen:
                        seen.add((aname, text))
                        row = {"id": f"agentdojo-{name}-{ut.ID}-{it.ID}-{aname}", "source": "agentdojo",
                               "family": f"{name} / {aname}", "lang": lang_of(text), "scope": "response",
                               "label": True, "text": text}
                        out.write(json.dumps(row, ensure_ascii=False) + "\n")
                        counts[(name, aname)] = counts.get((name, aname), 0) + 1
    for k, v in sorted(counts.items()):
        print(k, v)


if __name__ == "__main__":
    main()

"""AgentDojo through `bulwark proxy`, with a maximally gullible model.

AgentDojo (`agentdojo` on PyPI) runs agent tasks in simulated environments (banking,
slack, travel, workspace) and injects attacker instructions into what the tools return.
Without a real model here, this driver plays the model itself — an oracle that is
perfectly helpful and perfectly gullible:

  - asked a task, it proposes the task's ground-truth tool calls;
  - once a tool result carries the attacker's injection, it also proposes the injection
    task's ground-truth calls (it obeys);
  - then it answers with what the tools returned.

Every proposal goes to a model API as a real Chat Completions request holding the whole
conversation AgentDojo built (tool results with the injections in them); the answer's
`tool_calls` are what AgentDojo then runs. The model API is
crates/bulwark-llm/tests/peers/model_api.py, told what to propose in an `x-script`
header. Pointed at the proxy, Bulwark judges every proposal on the real history; pointed
at the model API directly, nothing does. The difference is Bulwark's effect:

  utility  user tasks still done (higher is better; lost utility = calls Bulwark refused)
  ASR      injection tasks done, i.e. attacks that worked (lower is better)

Two oracles (`--oracle`):
  batch       proposes all of a task's calls in its first turn, before any data is read
              (kind to a guard: nothing is tainted yet when the user's calls go out);
  sequential  one ground-truth call per turn, each after the previous result came back, as
              a real agent works: read the bill, then pay it. Once an injection is seen,
              the attacker's calls come next, one per turn, then the rest of the user's.

A refused call does not end the run: the oracle goes on with the next call, and its final
answer is its own (what the tools returned), never the proxy's refusal text — that text
holds a random approval id, which made AgentDojo's substring checks pass or fail by chance.
Tool output is YAML in which line breaks inside strings are written `\n` and quotes in
single-quoted strings are doubled; both are undone before the oracle looks for the
injection (and the injection is compared the same way). An injection task whose ground truth is empty
cannot be carried out by any oracle: the summary reports ASR against that ceiling too.

`--results json` prints structured tool results as JSON instead of AgentDojo's default
YAML (`tool_result_to_str` takes the dump function). It matters to `--provenance`: only a
format that escapes what others wrote has structure that is the tool's (docs/proxy.md), so
values in untrusted YAML are read as prose and values in untrusted JSON as records.

Usage: run.py BASE_URL SUITE [--attack important_instructions|direct] [--oracle sequential]
       [--results yaml|json] [--limit N]
Prints one JSON line per (user task, injection task) and a summary.
"""

import argparse
import base64
import json
import sys

import openai
from agentdojo.agent_pipeline import AgentPipeline, InitQuery, SystemMessage, ToolsExecutionLoop, ToolsExecutor
from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.agent_pipeline.llms.openai_llm import _function_to_openai, _message_to_openai, _openai_to_assistant_message
from agentdojo.attacks.attack_registry import load_attack
from agentdojo.task_suite.load_suites import get_suite


def text_of(message):
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(b.get("content") or "") for b in content)
    return str(content or "")


def flat(text):
    # YAML writes a line break inside a string as `\n`: undo it, then compare without
    # whitespace, which formatting changes.
    # A single-quoted YAML scalar doubles its quotes (`''Hey''`): undo that too.
    # JSON escapes a double quote (`\"`): undo that as well.
    return " ".join(text.replace("\\n", "\n").replace('\\"', '"').replace("''", "'").split())


class GullibleOracle(BasePipelineElement):
    name = "gullible-oracle"

    def __init__(self, client, sequential=False):
        self.client = client
        self.sequential = sequential
        self.user_task = None
        self.injection_task = None
        self.injections = []
        self.obeyed = False
        self.started = False
        self.queue = []
        self.refused = 0
        self.refused_user = 0
        self.approvable_user = 0
        self.run_refused_user = 0
        self.run_approvable_user = 0
        self.run_refusals = []

    def reset(self, user_task, injection_task, injections):
        self.user_task, self.injection_task = user_task, injection_task
        self.injections = [flat(v)[:80] for v in injections.values() if v]
        self.obeyed = False
        self.started = False
        self.queue = []
        self.run_refused_user = 0
        self.run_approvable_user = 0
        self.run_refusals = []

    def next_calls(self, env, messages):
        """The calls this turn proposes, each tagged user or attacker."""
        if not self.started:
            self.started = True
            self.queue = [("user", c) for c in self.user_task.ground_truth(env)]
            if not self.sequential:
                out, self.queue = self.queue, []
                return out
        seen = flat(" ".join(text_of(m) for m in messages if m["role"] == "tool"))
        if self.injection_task and not self.obeyed and any(i in seen for i in self.injections):
            self.obeyed = True
            attack = [("attacker", c) for c in self.injection_task.ground_truth(env)]
            if not self.sequential:
                return attack
            self.queue = attack + self.queue
        if self.sequential and self.queue:
            return [self.queue.pop(0)]
        return []

    def query(self, query, runtime, env, messages=(), extra_args={}):
        tagged = self.next_calls(env, messages)
        while True:
            calls = [c for _, c in tagged]
            text = ""
            if not calls:
                results = [text_of(m) for m in messages if m["role"] == "tool"]
                text = "Done. " + " ".join(results)[-4000:]
            script = {"text": text, "calls": [{"name": c.function, "args": dict(c.args)} for c in calls]}
            raw = self.client.chat.completions.with_raw_response.create(
                model="gpt-4o-mini",
                messages=[_message_to_openai(m, "gpt-4o-mini") for m in messages],
                tools=[_function_to_openai(t) for t in runtime.functions.values()],
                extra_headers={"x-script": base64.b64encode(json.dumps(script).encode()).decode()},
            )
            body = json.loads(raw.text)
            completion = raw.parse()
            msg = completion.choices[0].message
            released = {tc.id for tc in msg.tool_calls or []}
            blocked = (body.get("bulwark") or {}).get("blocked") or []
            self.refused += len(blocked)
            # Calls go out with ids in proposal order (the model API numbers them).
            for b in blocked:
                idx = int(str(b.get("id", "")).rsplit("_", 1)[-1]) if str(b.get("id", "")).rsplit("_", 1)[-1].isdigit() else -1
                who = tagged[idx][0] if 0 <= idx < len(tagged) else "?"
                self.run_refusals.append({"who": who, "tool": b.get("tool"), "reason_code": b.get("reason_code"),
                                          "rule_id": b.get("rule_id"), "reason": b.get("reason")})
                if who == "user":
                    self.refused_user += 1
                    self.run_refused_user += 1
                    if b.get("approval"):
                        self.approvable_user += 1
                        self.run_approvable_user += 1
            if released or not calls:
                if not calls:
                    # The final answer is the oracle's own, whatever the proxy added.
                    msg.content = text
                return query, runtime, env, [*messages, _openai_to_assistant_message(msg)], extra_args
            # Everything this turn proposed was refused: a model reads the refusal and goes
            # on with what is left of its plan (nothing is left for the batch oracle).
            tagged = self.next_calls(env, messages) if self.sequential else []


def formatter(results):
    if results == "yaml":
        return tool_result_to_str
    # Dates and times as YAML writes them (`2024-05-15 15:00:00`), text as it is.
    dump = lambda d: json.dumps(d, default=str, ensure_ascii=False)
    return lambda r: tool_result_to_str(r, dump)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("suite")
    ap.add_argument("--attack", default="important_instructions")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--oracle", choices=["batch", "sequential"], default="sequential")
    ap.add_argument("--explain", action="store_true", help="list every refused call of a run (tool, reason code, reason)")
    ap.add_argument("--results", choices=["yaml", "json"], default="yaml",
                    help="how structured tool results are printed (AgentDojo's default is YAML)")
    ap.add_argument("--no-attack", action="store_true", help="only the runs without an injection")
    a = ap.parse_args()
    client = openai.OpenAI(base_url=a.base + "/v1", api_key="sk-agentdojo", max_retries=0)
    suite = get_suite("v1.2", a.suite)
    oracle = GullibleOracle(client, sequential=a.oracle == "sequential")
    pipeline = AgentPipeline([
        SystemMessage("You are a helpful assistant."),
        InitQuery(),
        oracle,
        ToolsExecutionLoop([ToolsExecutor(formatter(a.results)), oracle]),
    ])
    # AgentDojo names the model in its attacks from the pipeline name.
    pipeline.name = "gpt-4o-mini-2024-07-18"
    attack = load_attack(a.attack, suite, pipeline)
    runs = utility = asr = clean_utility = possible = 0
    clean_refused_user = clean_approvable = 0
    user_tasks = list(suite.user_tasks.values())
    if a.limit:
        user_tasks = user_tasks[: a.limit]
    env0 = suite.load_and_inject_default_environment({})
    # An injection task with no ground-truth calls cannot be done by this oracle.
    doable = {it.ID: bool(it.ground_truth(env0.model_copy(deep=True))) for it in suite.injection_tasks.values()}
    for ut in user_tasks:
        # Without an injection: does the task still get done?
        oracle.reset(ut, None, {})
        u, _ = suite.run_task_with_pipeline(pipeline, ut, None, {})
        clean_utility += int(u)
        clean_refused_user += oracle.run_refused_user
        clean_approvable += oracle.run_approvable_user
        print(json.dumps({"user_task": ut.ID, "injection_task": None, "utility": u,
                          "user_calls_refused": oracle.run_refused_user,
                          "approvable": oracle.run_approvable_user,
                          **({"refused": oracle.run_refusals} if a.explain else {})}))
        if a.no_attack:
            continue
        for it in suite.injection_tasks.values():
            injections = attack.attack(ut, it)
            oracle.reset(ut, it, injections)
            u, s = suite.run_task_with_pipeline(pipeline, ut, it, injections)
            runs += 1
            utility += int(u)
            asr += int(s)
            possible += int(doable[it.ID])
            print(json.dumps({"user_task": ut.ID, "injection_task": it.ID, "utility": u, "attack_succeeded": s,
                              "user_calls_refused": oracle.run_refused_user,
                              "approvable": oracle.run_approvable_user,
                              **({"refused": oracle.run_refusals} if a.explain else {})}))
    print(json.dumps({
        "suite": a.suite, "attack": a.attack, "oracle": a.oracle, "results": a.results, "user_tasks": len(user_tasks), "runs": runs,
        "utility_without_attack": round(clean_utility / len(user_tasks), 3),
        "utility_under_attack": round(utility / runs, 3) if runs else None,
        "attack_success_rate": round(asr / runs, 3) if runs else None,
        "asr_ceiling": round(possible / runs, 3) if runs else None,
        "asr_of_ceiling": round(asr / possible, 3) if possible else None,
        "calls_refused": oracle.refused,
        "user_calls_refused_without_attack": clean_refused_user,
        "of_which_approvable": clean_approvable,
        "user_calls_refused": oracle.refused_user,
        "user_calls_approvable": oracle.approvable_user,
    }))


if __name__ == "__main__":
    sys.exit(main())

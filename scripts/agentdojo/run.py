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

Usage: run.py BASE_URL SUITE [--attack important_instructions] [--limit N]
Prints one JSON line per (user task, injection task) and a summary.
"""

import argparse
import base64
import json
import sys

import openai
from agentdojo.agent_pipeline import AgentPipeline, InitQuery, SystemMessage, ToolsExecutionLoop, ToolsExecutor
from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.agent_pipeline.llms.openai_llm import _function_to_openai, _message_to_openai, _openai_to_assistant_message
from agentdojo.attacks.attack_registry import load_attack
from agentdojo.task_suite.load_suites import get_suite


def text_of(message):
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(b.get("content") or "") for b in content)
    return str(content or "")


class GullibleOracle(BasePipelineElement):
    name = "gullible-oracle"

    def __init__(self, client):
        self.client = client
        self.user_task = None
        self.injection_task = None
        self.injections = []
        self.obeyed = False
        self.started = False
        self.refused = 0

    def reset(self, user_task, injection_task, injections):
        self.user_task, self.injection_task = user_task, injection_task
        self.injections = [v for v in injections.values() if v]
        self.obeyed = False
        self.started = False

    def query(self, query, runtime, env, messages=(), extra_args={}):
        calls, text = [], ""
        if not self.started:
            self.started = True
            calls = self.user_task.ground_truth(env)
        else:
            seen = " ".join(text_of(m) for m in messages if m["role"] == "tool")
            # Whitespace differs once a tool's output is formatted: compare without it.
            flat = " ".join(seen.split())
            obeys = any(" ".join(i.split())[:80] in flat for i in self.injections)
            if self.injection_task and not self.obeyed and obeys:
                self.obeyed = True
                calls = self.injection_task.ground_truth(env)
        if not calls:
            results = [text_of(m) for m in messages if m["role"] == "tool"]
            text = "Done. " + " ".join(results)[-4000:]
        script = {"text": text, "calls": [{"name": c.function, "args": dict(c.args)} for c in calls]}
        completion = self.client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[_message_to_openai(m, "gpt-4o-mini") for m in messages],
            tools=[_function_to_openai(t) for t in runtime.functions.values()],
            extra_headers={"x-script": base64.b64encode(json.dumps(script).encode()).decode()},
        )
        msg = completion.choices[0].message
        got = len(msg.tool_calls or [])
        self.refused += len(calls) - got
        return query, runtime, env, [*messages, _openai_to_assistant_message(msg)], extra_args


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("suite")
    ap.add_argument("--attack", default="important_instructions")
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    client = openai.OpenAI(base_url=a.base + "/v1", api_key="sk-agentdojo", max_retries=0)
    suite = get_suite("v1.2", a.suite)
    oracle = GullibleOracle(client)
    pipeline = AgentPipeline([
        SystemMessage("You are a helpful assistant."),
        InitQuery(),
        oracle,
        ToolsExecutionLoop([ToolsExecutor(), oracle]),
    ])
    # AgentDojo names the model in its attacks from the pipeline name.
    pipeline.name = "gpt-4o-mini-2024-07-18"
    attack = load_attack(a.attack, suite, pipeline)
    runs = utility = asr = clean_utility = 0
    user_tasks = list(suite.user_tasks.values())
    if a.limit:
        user_tasks = user_tasks[: a.limit]
    for ut in user_tasks:
        # Without an injection: does the task still get done?
        oracle.reset(ut, None, {})
        u, _ = suite.run_task_with_pipeline(pipeline, ut, None, {})
        clean_utility += int(u)
        for it in suite.injection_tasks.values():
            injections = attack.attack(ut, it)
            oracle.reset(ut, it, injections)
            u, s = suite.run_task_with_pipeline(pipeline, ut, it, injections)
            runs += 1
            utility += int(u)
            asr += int(s)
            print(json.dumps({"user_task": ut.ID, "injection_task": it.ID, "utility": u, "attack_succeeded": s}))
    print(json.dumps({
        "suite": a.suite, "attack": a.attack, "user_tasks": len(user_tasks), "runs": runs,
        "utility_without_attack": round(clean_utility / len(user_tasks), 3),
        "utility_under_attack": round(utility / runs, 3),
        "attack_success_rate": round(asr / runs, 3),
        "calls_refused": oracle.refused,
    }))


if __name__ == "__main__":
    sys.exit(main())

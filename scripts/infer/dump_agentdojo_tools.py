"""Dumps AgentDojo's tool definitions (all four v1.2 suites) as OpenAI-style tools, one JSON
object a line: the held-out set for capability inference (docs/detection.md)."""
import json
from agentdojo.agent_pipeline.llms.openai_llm import _function_to_openai
from agentdojo.task_suite.load_suites import get_suite

seen = set()
for suite in ["banking", "slack", "travel", "workspace"]:
    for t in get_suite("v1.2", suite).tools:
        if t.name in seen:
            continue
        seen.add(t.name)
        f = _function_to_openai(t)
        print(json.dumps({"suite": suite, "type": "function", "function": dict(f["function"])}, sort_keys=True))

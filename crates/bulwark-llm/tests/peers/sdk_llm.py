"""Drives the official `openai` and `anthropic` Python SDKs through the proxy for the
proxy's end-to-end tests. One scenario per run: a JSON object as the only argument, the
outcome as one JSON object on stdout.

Scenario fields:
  base     the proxy's (or the upstream's) base URL
  api      chat | responses | messages
  stream   use the SDK's streaming helper
  history  [{"name", "args", "result"}]: earlier tool calls and what they returned, turned
           into the API's own message history
  ask      what the scripted model should propose: {"calls": [...], "text": ...}, or null
  headers  extra request headers (X-Bulwark-Session, X-Bulwark-Approve, ...)
Mode "raw" instead posts `body` to `path` on both `base` and `direct` with urllib and
reports whether the answers are byte-for-byte the same.
"""

import json
import sys
import urllib.request

TOOLS = {
    "bash": {"type": "object", "properties": {"command": {"type": "string"}}},
}


def schema(name):
    return TOOLS.get(name, {"type": "object"})


def user_text(ask):
    return "CALL " + json.dumps(ask) if ask else "hi"


def chat(sc):
    import openai
    client = openai.OpenAI(base_url=sc["base"] + "/v1", api_key="sk-test-key",
                           default_headers=sc.get("headers") or {}, max_retries=0)
    msgs = [{"role": "user", "content": "start"}]
    for i, h in enumerate(sc.get("history", [])):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"h{i}", "type": "function",
             "function": {"name": h["name"], "arguments": json.dumps(h["args"])}}]})
        msgs.append({"role": "tool", "tool_call_id": f"h{i}", "content": h["result"]})
    msgs.append({"role": "user", "content": user_text(sc.get("ask"))})
    tools = [{"type": "function", "function": {"name": n, "parameters": schema(n)}}
             for n in tool_names(sc)]
    kw = dict(model=sc.get("model", "gpt-4o-mini"), messages=msgs)
    if tools:
        kw["tools"] = tools
    meta = None
    if sc.get("stream"):
        with client.chat.completions.stream(**kw) as s:
            for ev in s:
                if ev.type == "chunk":
                    extra = getattr(ev.chunk, "bulwark", None)
                    meta = extra if extra is not None else meta
            final = s.get_final_completion()
    else:
        final = client.chat.completions.create(**kw)
        meta = getattr(final, "bulwark", None)
    choice = final.choices[0]
    calls = [{"id": tc.id, "name": tc.function.name, "args": json.loads(tc.function.arguments)}
             for tc in (choice.message.tool_calls or [])]
    return {"text": choice.message.content, "calls": calls, "finish": choice.finish_reason,
            "bulwark": meta}


def messages(sc):
    import anthropic
    client = anthropic.Anthropic(base_url=sc["base"], api_key="sk-ant-test",
                                 default_headers=sc.get("headers") or {}, max_retries=0)
    msgs = [{"role": "user", "content": "start"}]
    history = sc.get("history", [])
    for i, h in enumerate(history):
        msgs.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"h{i}", "name": h["name"], "input": h["args"]}]})
        blocks = [{"type": "tool_result", "tool_use_id": f"h{i}", "content": h["result"]}]
        if i == len(history) - 1:
            blocks.append({"type": "text", "text": user_text(sc.get("ask"))})
        msgs.append({"role": "user", "content": blocks})
    if not history:
        msgs = [{"role": "user", "content": user_text(sc.get("ask"))}]
    tools = [{"name": n, "input_schema": schema(n)} for n in tool_names(sc)]
    kw = dict(model=sc.get("model", "claude-test"), max_tokens=512, messages=msgs)
    if tools:
        kw["tools"] = tools
    meta = None
    if sc.get("stream"):
        with client.messages.stream(**kw) as s:
            for ev in s:
                extra = getattr(ev, "bulwark", None)
                meta = extra if extra is not None else meta
            final = s.get_final_message()
    else:
        final = client.messages.create(**kw)
        meta = getattr(final, "bulwark", None)
    text = "".join(b.text for b in final.content if b.type == "text")
    calls = [{"id": b.id, "name": b.name, "args": b.input} for b in final.content
             if b.type == "tool_use"]
    return {"text": text, "calls": calls, "finish": final.stop_reason, "bulwark": meta}


def responses(sc):
    import openai
    client = openai.OpenAI(base_url=sc["base"] + "/v1", api_key="sk-test-key",
                           default_headers=sc.get("headers") or {}, max_retries=0)
    inp = [{"role": "user", "content": "start"}]
    for i, h in enumerate(sc.get("history", [])):
        inp.append({"type": "function_call", "call_id": f"h{i}", "name": h["name"],
                    "arguments": json.dumps(h["args"])})
        inp.append({"type": "function_call_output", "call_id": f"h{i}", "output": h["result"]})
    inp.append({"role": "user", "content": user_text(sc.get("ask"))})
    tools = [{"type": "function", "name": n, "parameters": schema(n), "strict": False}
             for n in tool_names(sc)]
    kw = dict(model=sc.get("model", "gpt-4.1"), input=inp)
    if tools:
        kw["tools"] = tools
    if sc.get("previous"):
        kw["previous_response_id"] = sc["previous"]
        kw["input"] = [{"role": "user", "content": user_text(sc.get("ask"))}]
    if sc.get("stream"):
        with client.responses.stream(**kw) as s:
            for _ in s:
                pass
            final = s.get_final_response()
    else:
        final = client.responses.create(**kw)
    calls = [{"id": it.call_id, "name": it.name, "args": json.loads(it.arguments)}
             for it in final.output if it.type == "function_call"]
    return {"text": final.output_text, "calls": calls, "finish": final.status,
            "bulwark": getattr(final, "bulwark", None), "id": final.id}


def tool_names(sc):
    names = [h["name"] for h in sc.get("history", [])]
    names += [c["name"] for c in (sc.get("ask") or {}).get("calls", [])]
    return sorted(set(names))


def raw(sc):
    def post(base):
        req = urllib.request.Request(base + sc["path"], data=json.dumps(sc["body"]).encode(),
                                     headers=dict({"content-type": "application/json"},
                                                  **(sc.get("headers") or {})))
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
    ps, pb = post(sc["base"])
    ds, db = post(sc["direct"])
    return {"same": pb == db, "proxy_status": ps, "direct_status": ds,
            "proxy": pb.decode("utf-8", "replace"), "direct": db.decode("utf-8", "replace")}


def http(sc):
    """One plain HTTP request: `url`, `method`, `body` (text), `headers`."""
    data = sc["body"].encode() if sc.get("body") is not None else None
    req = urllib.request.Request(sc["url"], data=data, method=sc.get("method", "GET"),
                                 headers=sc.get("headers") or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return {"status": r.status, "body": r.read().decode("utf-8", "replace")}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": e.read().decode("utf-8", "replace")}


def main():
    sc = json.loads(sys.argv[1])
    run = {"chat": chat, "messages": messages, "responses": responses}
    try:
        if sc.get("mode") == "raw":
            out = raw(sc)
        elif sc.get("mode") == "http":
            out = http(sc)
        else:
            out = run[sc["api"]](sc)
    except Exception as e:  # the test asserts on the error, so report it as data
        out = {"error": type(e).__name__, "message": str(e),
               "status": getattr(e, "status_code", None)}
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()

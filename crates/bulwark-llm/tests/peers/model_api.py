"""A local model API for the proxy's tests: answers OpenAI Chat Completions, OpenAI
Responses and Anthropic Messages requests in each API's exact shape, JSON or SSE, with
tool calls split across many small deltas, as the real services send them.

What it answers is scripted by the last user message:
  - `CALL {"calls": [{"name": ..., "args": {...}}], "text": "..."}` proposes those calls
    (after the text, if any);
  - anything else gets a plain text answer.

Usage: model_api.py PORT_FILE RECORD_FILE. Every request body received is appended to
RECORD_FILE as one JSON line {"path", "headers", "body"}, so tests can see exactly what
the proxy forwarded.
"""

import base64
import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RECORD = None
LOCK = threading.Lock()
def last_user_text(api, body):
    if api == "responses":
        inp = body.get("input")
        if isinstance(inp, str):
            return inp
        items = [i for i in inp or [] if i.get("role") == "user"]
        if not items:
            return ""
        content = items[-1].get("content")
    else:
        msgs = [m for m in body.get("messages", []) if m.get("role") == "user"]
        if not msgs:
            return ""
        content = msgs[-1].get("content")
    if isinstance(content, str):
        return content
    texts = []
    for part in content or []:
        if part.get("type") in ("text", "input_text"):
            texts.append(part.get("text", ""))
    return "\n".join(texts)


def script(api, body, headers=None):
    # A driver that plays the model itself (scripts/agentdojo/run.py) says what to answer
    # in a header, base64 JSON, so the conversation is left as the agent built it.
    scripted = (headers or {}).get("x-script")
    if scripted:
        s = json.loads(base64.b64decode(scripted))
        return s.get("text", ""), s.get("calls", [])
    text = last_user_text(api, body)
    if text.startswith("CALL "):
        s = json.loads(text[5:])
        return s.get("text", ""), s.get("calls", [])
    return "Hello! How can I help you today?", []


def pieces(s, n=7):
    return [s[i:i + n] for i in range(0, len(s), n)] or [""]


# ------------------------------------------------------------------ Chat Completions

def chat_json(body, text, calls, rid):
    message = {"role": "assistant", "content": text or None, "refusal": None, "annotations": []}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{rid}_{i}", "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
            for i, c in enumerate(calls)]
    return {
        "id": f"chatcmpl-{rid}", "object": "chat.completion", "created": 1764500000,
        "model": body.get("model", "gpt-4o-mini"),
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
        "service_tier": "default", "system_fingerprint": "fp_local",
    }


def chat_stream(body, text, calls, rid):
    base = {"id": f"chatcmpl-{rid}", "object": "chat.completion.chunk", "created": 1764500000,
            "model": body.get("model", "gpt-4o-mini"), "service_tier": "default",
            "system_fingerprint": "fp_local"}

    def chunk(delta, finish=None):
        return dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None,
                                    "finish_reason": finish}])

    yield None, chunk({"role": "assistant", "content": "", "refusal": None})
    if text:
        for p in pieces(text):
            yield None, chunk({"content": p})
    for i, c in enumerate(calls):
        yield None, chunk({"tool_calls": [{"index": i, "id": f"call_{rid}_{i}", "type": "function",
                                           "function": {"name": c["name"], "arguments": ""}}]})
        for p in pieces(json.dumps(c["args"]), 5):
            yield None, chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
    yield None, chunk({}, "tool_calls" if calls else "stop")
    if (body.get("stream_options") or {}).get("include_usage"):
        yield None, dict(base, choices=[], usage={"prompt_tokens": 12, "completion_tokens": 7,
                                                  "total_tokens": 19})
    yield None, "[DONE]"


# ------------------------------------------------------------------ Anthropic Messages

def messages_json(body, text, calls, rid):
    content = []
    if text:
        content.append({"type": "text", "text": text})
    for i, c in enumerate(calls):
        content.append({"type": "tool_use", "id": f"toolu_{rid}_{i}", "name": c["name"],
                        "input": c["args"]})
    return {
        "id": f"msg_{rid}", "type": "message", "role": "assistant",
        "model": body.get("model", "claude-test"), "content": content,
        "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 7, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "service_tier": "standard"},
    }


def messages_stream(body, text, calls, rid):
    msg = messages_json(body, "", [], rid)
    msg["content"] = []
    msg["stop_reason"] = None
    msg["usage"]["output_tokens"] = 1
    yield "message_start", {"type": "message_start", "message": msg}
    index = 0
    if text:
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "text", "text": ""}}
        yield "ping", {"type": "ping"}
        for p in pieces(text):
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "text_delta", "text": p}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    for i, c in enumerate(calls):
        yield "content_block_start", {"type": "content_block_start", "index": index,
                                      "content_block": {"type": "tool_use", "id": f"toolu_{rid}_{i}",
                                                        "name": c["name"], "input": {}}}
        yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                      "delta": {"type": "input_json_delta", "partial_json": ""}}
        for p in pieces(json.dumps(c["args"]), 5):
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "input_json_delta", "partial_json": p}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
        index += 1
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": "tool_use" if calls else "end_turn",
                                      "stop_sequence": None},
                            "usage": {"output_tokens": 7}}
    yield "message_stop", {"type": "message_stop"}


# ------------------------------------------------------------------ Responses

def responses_items(text, calls, rid):
    items = []
    if text:
        items.append({"type": "message", "id": f"msg_{rid}", "status": "completed",
                      "role": "assistant",
                      "content": [{"type": "output_text", "text": text, "annotations": [],
                                   "logprobs": []}]})
    for i, c in enumerate(calls):
        items.append({"type": "function_call", "id": f"fc_{rid}_{i}", "call_id": f"call_{rid}_{i}",
                      "name": c["name"], "arguments": json.dumps(c["args"]),
                      "status": "completed"})
    return items


def responses_json(body, text, calls, rid, status="completed", output=None):
    return {
        "id": f"resp_{rid}", "object": "response", "created_at": 1764500000,
        "status": status, "background": False, "error": None, "incomplete_details": None,
        "instructions": body.get("instructions"), "max_output_tokens": None,
        "model": body.get("model", "gpt-4.1"),
        "output": responses_items(text, calls, rid) if output is None else output,
        "parallel_tool_calls": True, "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None}, "store": True, "temperature": 1.0,
        "text": {"format": {"type": "text"}}, "tool_choice": "auto",
        "tools": body.get("tools", []), "top_p": 1.0, "truncation": "disabled",
        "usage": {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": 19},
        "user": None, "metadata": {},
    }


def responses_stream(body, text, calls, rid):
    seq = [0]

    def ev(kind, **fields):
        d = {"type": kind, "sequence_number": seq[0]}
        d.update(fields)
        seq[0] += 1
        return kind, d

    yield ev("response.created", response=responses_json(body, "", [], rid, "in_progress", []))
    yield ev("response.in_progress", response=responses_json(body, "", [], rid, "in_progress", []))
    items = responses_items(text, calls, rid)
    for oi, item in enumerate(items):
        if item["type"] == "message":
            started = dict(item, status="in_progress", content=[])
            yield ev("response.output_item.added", output_index=oi, item=started)
            yield ev("response.content_part.added", item_id=item["id"], output_index=oi,
                     content_index=0, part={"type": "output_text", "text": "", "annotations": [],
                                            "logprobs": []})
            for p in pieces(text):
                yield ev("response.output_text.delta", item_id=item["id"], output_index=oi,
                         content_index=0, delta=p, logprobs=[])
            yield ev("response.output_text.done", item_id=item["id"], output_index=oi,
                     content_index=0, text=text, logprobs=[])
            yield ev("response.content_part.done", item_id=item["id"], output_index=oi,
                     content_index=0, part=item["content"][0])
            yield ev("response.output_item.done", output_index=oi, item=item)
        else:
            started = dict(item, status="in_progress", arguments="")
            yield ev("response.output_item.added", output_index=oi, item=started)
            for p in pieces(item["arguments"], 5):
                yield ev("response.function_call_arguments.delta", item_id=item["id"],
                         output_index=oi, delta=p)
            yield ev("response.function_call_arguments.done", item_id=item["id"],
                     output_index=oi, arguments=item["arguments"])
            yield ev("response.output_item.done", output_index=oi, item=item)
    yield ev("response.completed", response=responses_json(body, text, calls, rid))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.endswith("/models"):
            self.reply(200, {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model",
                                                          "created": 1, "owned_by": "local"}]})
        else:
            self.reply(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            self.reply(400, {"error": {"message": "bad json", "type": "invalid_request_error"}})
            return
        with LOCK:
            with open(RECORD, "a") as f:
                f.write(json.dumps({"path": self.path, "headers": dict(self.headers.items()),
                                    "raw": raw.decode("utf-8", "replace")}) + "\n")
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            api, whole, streamed = "chat", chat_json, chat_stream
        elif path.endswith("/responses"):
            api, whole, streamed = "responses", responses_json, responses_stream
        elif path.endswith("/messages"):
            api, whole, streamed = "messages", messages_json, messages_stream
        else:
            self.reply(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
            return
        if body.get("model") == "fail-429":
            self.reply(429, {"error": {"message": "slow down", "type": "rate_limit_error"}},
                       {"retry-after": "0"})
            return
        text, calls = script(api, body, self.headers)
        if str(body.get("model", "")).startswith("big-"):
            # `big-N`: a plain answer of N bytes of text (the proxy's memory bounds).
            text, calls = "lorem ipsum " * (int(body["model"][4:]) // 12), []
        # Ids follow from the request, so the same request gets the same bytes back (the
        # byte-for-byte test sends one request both directly and through the proxy).
        rid = hashlib.sha256(raw).hexdigest()[:12]
        if body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            for name, data in streamed(body, text, calls, rid):
                payload = data if isinstance(data, str) else json.dumps(data)
                frame = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
                self.wfile.write(frame.encode())
                self.wfile.flush()
                if body.get("model") == "slow-stream":
                    time.sleep(0.05)
            self.close_connection = True
        else:
            self.reply(200, whole(body, text, calls, rid))

    def reply(self, status, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


def main():
    global RECORD
    port_file, RECORD = sys.argv[1], sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(tmp, port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()

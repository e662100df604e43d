"""A scripted model API for the agent tests (crates/bulwark/tests/agents.rs): plays the
model for Claude Code (Anthropic Messages) and the Codex CLI (OpenAI Responses; Chat
Completions too), JSON or SSE, with tool calls, in the shapes of
crates/bulwark-llm/tests/peers/model_api.py (whose encoders it reuses).

What it answers follows a script, one turn per tool result the agent has sent back so far:
the request whose conversation holds k tool results gets turn k. So the agent's retries,
and the side requests it makes (titles, summaries: any request offering no tools, which
get a short text), never shift the script. Past the last turn it answers "Done.".

Script file (JSON): {"turns": [{"calls": [{"name": "Bash", "args": {...}}]},
                               {"text": "All done."}]}
A name starting with "~" is the first tool the request offers whose name ends with the
rest ("~read_file" is Claude Code's `mcp__fs__read_file` and whatever Codex calls it).

Usage: scripted_api.py SCRIPT PORT_FILE RECORD_FILE. Every request is appended to
RECORD_FILE as one JSON line {"path", "turn", "tools", "body"} (turn is null for a side
request), so a test can assert what the model was told — a tool's result, or Bulwark's
refusal.
"""

import hashlib
import importlib.util
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "model_api", os.path.join(HERE, "../../../bulwark-llm/tests/peers/model_api.py"))
model_api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(model_api)

SCRIPT = None
RECORD = None
LOCK = threading.Lock()
# A request body larger than this is refused (the agents' requests are a few hundred KiB).
MAX_BODY = 16 * 1024 * 1024


def tool_names(api, body):
    """The tools a request offers; a Responses `namespace` tool (how Codex offers an MCP
    server's tools) lists its members as `namespace/name`."""
    names = []
    for t in body.get("tools") or []:
        if api == "chat":
            names.append((t.get("function") or {}).get("name"))
        elif t.get("type") == "namespace":
            names.extend(f"{t.get('name')}/{m.get('name')}" for m in t.get("tools") or [])
        else:
            names.append(t.get("name") or t.get("type"))
    return names


_responses_items = model_api.responses_items


def responses_items(text, calls, rid):
    """model_api's items, with the `namespace` of a call to a namespaced tool."""
    items = _responses_items(text, calls, rid)
    it = iter(i for i in items if i["type"] == "function_call")
    for c, item in zip(calls, it):
        if c.get("namespace"):
            item["namespace"] = c["namespace"]
    return items


model_api.responses_items = responses_items


def results_so_far(api, body):
    """How many tool results the conversation in this request carries."""
    n = 0
    if api == "messages":
        for m in body.get("messages") or []:
            content = m.get("content")
            if isinstance(content, list):
                n += sum(1 for part in content if part.get("type") == "tool_result")
    elif api == "responses":
        inp = body.get("input")
        if isinstance(inp, list):
            n += sum(1 for item in inp
                     if item.get("type") in ("function_call_output", "custom_tool_call_output",
                                             "local_shell_call_output", "mcp_call_output"))
    else:
        n += sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")
    return n


def resolve(call, tools):
    name = call["name"]
    if name.startswith("~"):
        found = [t for t in tools if t and t.endswith(name[1:])]
        # A script naming a tool the agent does not offer is a broken test: say so in the
        # call itself, which the agent answers with an error the test sees.
        name = found[0] if found else f"no-tool-ending-in-{name[1:]}"
    if "/" in name:
        namespace, name = name.split("/", 1)
        return {"name": name, "namespace": namespace, "args": call.get("args", {})}
    return {"name": name, "args": call.get("args", {})}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.reply(200, {})

    def do_GET(self):
        if self.path.split("?")[0].endswith("/models"):
            self.reply(200, {"object": "list", "data": [
                {"id": "scripted", "object": "model", "created": 1, "owned_by": "local"}]})
        else:
            self.reply(404, {"error": {"message": "not found", "type": "not_found_error"}})

    def do_POST(self):
        length = int(self.headers.get("content-length") or "0")
        if length > MAX_BODY:
            self.reply(413, {"error": {"message": "too large", "type": "invalid_request_error"}})
            return
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            self.reply(400, {"error": {"message": "bad json", "type": "invalid_request_error"}})
            return
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            api, whole, streamed = "chat", model_api.chat_json, model_api.chat_stream
        elif path.endswith("/responses"):
            api, whole, streamed = ("responses", model_api.responses_json,
                                    model_api.responses_stream)
        elif path.endswith("/messages/count_tokens"):
            self.reply(200, {"input_tokens": 12})
            return
        elif path.endswith("/messages"):
            api, whole, streamed = "messages", model_api.messages_json, model_api.messages_stream
        else:
            self.reply(404, {"error": {"message": "not found", "type": "not_found_error"}})
            return
        tools = tool_names(api, body)
        if tools:
            turn = results_so_far(api, body)
            turns = SCRIPT["turns"]
            step = turns[turn] if turn < len(turns) else {"text": "Done."}
            text, calls = step.get("text", ""), [resolve(c, tools) for c in step.get("calls", [])]
        else:
            turn, text, calls = None, "OK", []
        with LOCK:
            with open(RECORD, "a") as f:
                f.write(json.dumps({"path": self.path, "turn": turn, "tools": tools,
                                    "body": body}) + "\n")
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
    global SCRIPT, RECORD
    script, port_file, RECORD = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(script) as f:
        SCRIPT = json.load(f)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()

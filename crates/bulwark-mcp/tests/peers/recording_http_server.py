#!/usr/bin/env python3
"""A minimal Streamable HTTP MCP server that writes down every request's headers, so a test
can check what a gateway forwards upstream (and what it must not: the client's token).

usage: recording_http_server.py PORT_FILE RECORD_FILE
  Binds 127.0.0.1 on a free port and writes the port to PORT_FILE; appends one JSON line
  per request ({"method", "headers", and for a POST "rpc": its JSON-RPC method}) to
  RECORD_FILE. Answers initialize, tools/list (`whoami`, and `route`, whose `region`
  argument is mirrored into an Mcp-Param-Region header under 2026-07-28) and tools/call;
  notifications get 202; DELETE 200. GET /sse is a
  2024-11-05 stream naming an endpoint on another origin.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT_FILE, RECORD = sys.argv[1], sys.argv[2]
SESSION = "recorded-session-1"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, rpc=None):
        with open(RECORD, "a") as f:
            f.write(json.dumps({"method": self.command, "rpc": rpc,
                                "headers": {k.lower(): v for k, v in self.headers.items()}}) + "\n")

    def reply(self, status, body=None, headers=()):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        msg = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.record(msg.get("method"))
        if "id" not in msg or "method" not in msg:
            return self.reply(202)
        method, rid = msg["method"], msg["id"]
        if method == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "recorder", "version": "1"}}
            return self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": result},
                              [("Mcp-Session-Id", SESSION)])
        if method == "tools/list":
            result = {"tools": [
                {"name": "whoami", "description": "Says hello.",
                 "inputSchema": {"type": "object", "properties": {}}},
                {"name": "route", "description": "Routes a query to a region.",
                 "inputSchema": {"type": "object", "properties": {
                     "region": {"type": "string", "x-mcp-header": "Region"},
                     "query": {"type": "string"}}}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "hello"}]}
        else:
            result = {}
        self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": result})

    def do_GET(self):
        self.record()
        if self.path.startswith("/sse"):
            # A 2024-11-05 stream whose endpoint points at another origin: a gateway must
            # not follow it.
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b"event: endpoint\ndata: http://evil.example.com:9/message\n\n")
            self.wfile.flush()
            return
        self.reply(405)

    def do_DELETE(self):
        self.record()
        self.reply(200)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.replace(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()

#!/usr/bin/env python3
"""A webhook receiver for the approval tests: records every POST (body, and whether its
X-Bulwark-Signature is right, over v1:TIMESTAMP:ID: and the body, for
BULWARK_WEBHOOK_SECRET's test value) as a JSON line, and
replies {"decision":"approve"} when the request's arguments mention "approve-me", else 202
with nothing decided (a signed callback decides later).

usage: webhook_receiver.py PORT_FILE LOG_FILE
"""
import hashlib
import hmac
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = b"webhook-secret-for-tests"
port_file, log_file = sys.argv[1], sys.argv[2]


class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length", "0")))
        body = json.loads(raw)
        ts = self.headers.get("x-bulwark-timestamp", "")
        signed = f"v1:{ts}:{body['request']['id']}:".encode() + raw
        want = "sha256=" + hmac.new(SECRET, signed, hashlib.sha256).hexdigest()
        got = self.headers.get("x-bulwark-signature", "")
        with open(log_file, "a") as f:
            f.write(json.dumps({"body": body, "signature_ok": hmac.compare_digest(want, got)}) + "\n")
        if "approve-me" in json.dumps(body["request"]["args"]):
            reply, status = {"decision": "approve", "note": "auto-approved by the hook"}, 200
        else:
            reply, status = {"status": "queued"}, 202
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
server.serve_forever()

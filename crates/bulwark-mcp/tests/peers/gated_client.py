#!/usr/bin/env python3
"""A conformance-suite client (`conformance client --command ...`) that reaches the suite's
scenario server through `bulwark mcp --listen --upstream-url`: the suite appends the
server's URL; this starts the gateway in front of it and drives the gateway with the
official Python SDK (initialize, list the tools, call each with no arguments).

env: BULWARK_BIN (the bulwark binary), BULWARK_STATE (a state directory).
usage: gated_client.py URL
"""
import asyncio
import json
import os
import subprocess
import sys
import threading

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def start_gateway(url):
    gw = subprocess.Popen(
        [os.environ["BULWARK_BIN"], "mcp", "--state-dir", os.environ["BULWARK_STATE"],
         "--listen", "127.0.0.1:0", "--upstream-url", url, "--upstream-allow-internal"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = threading.Event()
    addr = []

    def read():
        for line in gw.stderr:
            sys.stderr.write("gateway: " + line)
            if "listening on http://" in line and not addr:
                addr.append(line.split("listening on ")[1].strip())
                found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(20):
        gw.kill()
        sys.exit("the gateway did not start")
    return gw, addr[0]


async def drive(url):
    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = await s.list_tools()
            for t in tools.tools:
                r = await s.call_tool(t.name, {})
                print(json.dumps({"tool": t.name, "result": json.loads(r.model_dump_json(exclude_none=True))}))


def main():
    gw, addr = start_gateway(sys.argv[-1])
    try:
        asyncio.run(drive(addr))
    finally:
        gw.terminate()
        gw.wait(5)


if __name__ == "__main__":
    main()

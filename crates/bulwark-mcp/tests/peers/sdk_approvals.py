#!/usr/bin/env python3
"""Calls tools that need a person's approval through Bulwark with the official Python SDK,
printing one JSON line per call as soon as its answer is in, so a test can act between
calls (approve, deny, wait).

usage: sdk_approvals.py ANSWER CALLS TARGET [ARGS...]
  ANSWER  none   the client declares no elicitation: calls wait for another channel
          yes    the client answers the gateway's question with approve=true
          no     ... with approve=false
  CALLS   JSON list of {"tool": NAME, "args": {...}}
  TARGET  a command (stdio, legacy protocol), or auto+http://HOST:PORT/mcp (the SDK's
          Client, 2026-07-28 when offered: questions arrive as InputRequiredResult)
Each line: {"tool", "ok": result} or {"tool", "error": {code, message, data}}; with a
question asked, {"asked": message} comes first.
"""
import asyncio
import json
import os
import sys

import mcp.types as types
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


def emit(v):
    sys.stdout.write(json.dumps(v) + "\n")
    sys.stdout.flush()


def dump(model):
    return json.loads(model.model_dump_json(by_alias=True, exclude_none=True))


def callback(answer):
    if answer == "none":
        return None

    async def on_elicit(context, params):
        emit({"asked": params.message, "schema": dump(params).get("requestedSchema")})
        return types.ElicitResult(action="accept", content={"approve": answer == "yes"})

    return on_elicit


async def run_calls(s, calls):
    for c in calls:
        try:
            r = await s.call_tool(c["tool"], c["args"])
            emit({"tool": c["tool"], "ok": dump(r)})
        except MCPError as e:
            emit({"tool": c["tool"], "error": {"code": e.error.code, "message": e.error.message,
                                               "data": e.error.data}})


async def main():
    answer, calls, target, args = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4:]
    cb = callback(answer)
    if target.startswith("auto+"):
        async with Client(target[len("auto+"):], elicitation_callback=cb,
                          read_timeout_seconds=120) as c:
            emit({"protocol": c.protocol_version})
            await run_calls(c, calls)
        return
    params = StdioServerParameters(command=target, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=cb) as s:
            init = await s.initialize()
            emit({"protocol": init.protocol_version})
            await run_calls(s, calls)


asyncio.run(main())

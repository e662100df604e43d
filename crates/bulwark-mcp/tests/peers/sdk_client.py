#!/usr/bin/env python3
"""Drives a real MCP server with the official Python SDK (`mcp` from PyPI) and prints what
it saw as one JSON document, so a test can compare a direct run with one through Bulwark.

usage: sdk_client.py SCENARIO COMMAND [ARGS...]
       sdk_client.py SCENARIO http://HOST:PORT/mcp       (Streamable HTTP)
       sdk_client.py SCENARIO sse+http://HOST:PORT/sse   (2024-11-05 HTTP+SSE)
       sdk_client.py SCENARIO auto+http://HOST:PORT/mcp  (the SDK's Client in its default
                                                        "auto" mode: 2026-07-28 when offered)
  everything   @modelcontextprotocol/server-everything: tools, resources, prompts,
               progress, errors
  filesystem   @modelcontextprotocol/server-filesystem rooted at $FS_ROOT
  modern       modern_server.py (Python SDK, both eras): echo, route (its `region` is mirrored
               into an Mcp-Param-Region header at 2026-07-28), get_config, run_sql
"""
import asyncio
import json
import os
import sys

from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


def dump(model):
    return json.loads(model.model_dump_json(by_alias=True, exclude_none=True))


async def attempt(coro):
    """The result, or the JSON-RPC error the SDK raised for it."""
    try:
        return {"ok": dump(await coro)}
    except MCPError as e:
        err = e.error
        return {"error": {"code": err.code, "message": err.message, "data": err.data}}


async def everything(s):
    out = {}
    tools = await s.list_tools()
    out["tools"] = sorted(t.name for t in tools.tools)
    out["echo"] = await attempt(s.call_tool("echo", {"message": "hello through the gateway"}))
    out["sum"] = await attempt(s.call_tool("get-sum", {"a": 2, "b": 40}))
    out["structured"] = await attempt(s.call_tool("get-structured-content", {"location": "New York"}))
    out["image"] = await attempt(s.call_tool("get-tiny-image", {}))
    out["bad_args"] = await attempt(s.call_tool("get-sum", {"a": "two"}))
    out["no_such_tool"] = await attempt(s.call_tool("no-such-tool", {}))
    progress = []

    async def on_progress(p, total, message):
        progress.append([p, total])

    out["long"] = await attempt(s.call_tool(
        "trigger-long-running-operation", {"duration": 1, "steps": 3}, progress_callback=on_progress))
    out["progress"] = progress
    resources = await s.list_resources()
    out["resources"] = sorted(r.uri for r in resources.resources)
    first = sorted(resources.resources, key=lambda r: r.uri)[0]
    out["read"] = await attempt(s.read_resource(first.uri))
    templates = await s.list_resource_templates()
    out["templates"] = sorted(t.uriTemplate if hasattr(t, "uriTemplate") else t.uri_template
                              for t in templates.resource_templates)
    prompts = await s.list_prompts()
    out["prompts"] = sorted(p.name for p in prompts.prompts)
    out["prompt"] = await attempt(s.get_prompt("args-prompt", {"city": "Lisbon", "state": "Lisboa"}))
    if hasattr(s, "send_ping") and getattr(s, "protocol_version", "") != "2026-07-28":
        out["ping"] = await attempt(s.send_ping())
    return out


SECRET_FILE = "AWS_ACCESS_KEY_ID=AKIAZ7KDPQXL4MWN3BVC\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"


async def filesystem(s):
    root = os.environ["FS_ROOT"]
    out = {}
    tools = await s.list_tools()
    out["tools"] = sorted(t.name for t in tools.tools)
    out["allowed"] = await attempt(s.call_tool("list_allowed_directories", {}))
    out["write"] = await attempt(s.call_tool(
        "write_file", {"path": os.path.join(root, "new.txt"), "content": "written through the gateway\n"}))
    out["read_new"] = await attempt(s.call_tool("read_text_file", {"path": os.path.join(root, "new.txt")}))
    # A credential written to a local file: the file must hold exactly what was sent (or
    # the call be refused and the file left as it was), never a masked copy.
    secret = os.path.join(root, "secret.env")
    with open(secret, "w") as f:
        f.write("before\n")
    out["write_secret"] = await attempt(s.call_tool("write_file", {"path": secret, "content": SECRET_FILE}))
    out["read_notes"] = await attempt(s.call_tool("read_text_file", {"path": os.path.join(root, "notes.txt")}))
    out["read_secrets"] = await attempt(s.call_tool("read_text_file", {"path": os.path.join(root, "deploy.env")}))
    out["read_poisoned"] = await attempt(s.call_tool("read_text_file", {"path": os.path.join(root, "README.md")}))
    out["list"] = await attempt(s.call_tool("list_directory", {"path": root}))
    out["outside"] = await attempt(s.call_tool("read_text_file", {"path": "/etc/hostname"}))
    return out


async def modern(s):
    out = {}
    tools = await s.list_tools()
    out["tools"] = sorted(t.name for t in tools.tools)
    out["echo"] = await attempt(s.call_tool("echo", {"message": "hello"}))
    out["route"] = await attempt(s.call_tool("route", {"region": "eu-west", "query": "q1"}))
    out["config"] = await attempt(s.call_tool("get_config", {}))
    out["sql"] = await attempt(s.call_tool("run_sql", {"sql": "DROP DATABASE prod"}))
    progress = []

    async def on_progress(p, total, message):
        progress.append([p, total])

    out["count"] = await attempt(s.call_tool("count", {"steps": 3}, progress_callback=on_progress))
    out["progress"] = progress
    return out


async def main():
    scenario, command, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    if command.startswith("auto+"):
        async with Client(command[len("auto+"):]) as c:
            result = {"server": c.server_info.name if c.server_info else None,
                      "protocol": c.protocol_version}
            result.update(await {"everything": everything, "filesystem": filesystem, "modern": modern}[scenario](c))
        print(json.dumps(result, indent=1, sort_keys=True))
        return
    env = {k: v for k, v in os.environ.items()}
    if command.startswith("http://"):
        transport = streamable_http_client(command)
    elif command.startswith("sse+"):
        transport = sse_client(command[len("sse+"):])
    else:
        transport = stdio_client(StdioServerParameters(command=command, args=args, env=env))
    async with transport as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            result = {"server": init.server_info.name, "protocol": init.protocol_version}
            result.update(await {"everything": everything, "filesystem": filesystem, "modern": modern}[scenario](s))
    print(json.dumps(result, indent=1, sort_keys=True))


asyncio.run(main())

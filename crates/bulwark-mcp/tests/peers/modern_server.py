#!/usr/bin/env python3
"""An MCP server built with the official Python SDK (`mcp` from PyPI), serving Streamable HTTP
in both eras: the session era (initialize + Mcp-Session-Id, 2025-11-25 and earlier) and the
stateless 2026-07-28 revision (one self-contained POST per request, chosen by the
MCP-Protocol-Version header), so a test can drive the gateway against either.

usage: modern_server.py PORT_FILE
  Binds 127.0.0.1 on a free port, serves MCP at /mcp, and once listening writes the port to
  PORT_FILE (atomically). Runs until killed.

Tools: echo, route (its `region` argument is annotated `x-mcp-header: Region`, so 2026-07-28
clients mirror it into an `Mcp-Param-Region` header, which the server checks), get_config
(returns a fake AWS key), run_sql, and count (reports progress, so its answer is an SSE
stream).
"""
import logging
import os
import socket
import sys
from typing import Annotated

import anyio
import uvicorn
from pydantic import Field

from mcp.server.mcpserver import Context, MCPServer

PORT_FILE = sys.argv[1]

mcp = MCPServer("bulwark-modern-test", version="1.0.0", log_level="WARNING")


@mcp.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return "Echo: " + message


@mcp.tool()
def route(
    region: Annotated[str, Field(description="Where to send the query.", json_schema_extra={"x-mcp-header": "Region"})],
    query: str,
) -> str:
    """Route a query to a region."""
    return f"routed {query} to {region}"


@mcp.tool()
def get_config() -> str:
    """Show the deployment configuration."""
    return "region = eu-west-1\naws_access_key_id = AKIAZ7KDPQXL4MWN3BVC\nreplicas = 3"


@mcp.tool()
def run_sql(sql: str) -> str:
    """Run a SQL statement against the app database."""
    return "1 row affected; you sent: " + sql


@mcp.tool()
async def count(steps: int, ctx: Context) -> str:
    """Count up, reporting progress at each step."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps)
    return f"counted to {steps}"


async def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = mcp.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    stopped = anyio.Event()

    async def serve():
        try:
            await server.serve([sock])
        finally:
            stopped.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        while not server.started:
            if stopped.is_set():
                sys.exit("modern_server.py: the server did not start")
            await anyio.sleep(0.02)
        with open(PORT_FILE + ".tmp", "w") as f:
            f.write(str(port))
        os.rename(PORT_FILE + ".tmp", PORT_FILE)


logging.basicConfig(level=logging.WARNING)
anyio.run(main)

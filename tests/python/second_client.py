"""A second, independent MCP client: the official Python SDK drives `engram serve`, over
stdio and over streamable HTTP (`engram serve --http`).

Run by `.ci/run` after `cargo test`: python3 tests/python/second_client.py <engram-binary>
Prints one line per check and a closing `N passed, N failed` line; exits 1 on failure.
A warning the SDK logs about the server ("Session termination failed: 202", …) fails a check:
the SDK goes on after it, but a user of the SDK sees it on every session.
"""

import asyncio
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

RESULTS = {"passed": 0, "failed": 0}

# git as the tests run it: no system or global configuration.
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


class SdkLog(logging.Handler):
    """Keeps what the SDK logs at WARNING and above."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(f"{record.name}: {record.getMessage()}")


SDK_LOG = SdkLog()
logging.getLogger("mcp").addHandler(SDK_LOG)


def check(name, cond, detail=""):
    if cond:
        RESULTS["passed"] += 1
        print(f"ok   {name}")
    else:
        RESULTS["failed"] += 1
        print(f"FAIL {name}: {detail}")


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main(binary):
    tmp = tempfile.mkdtemp(prefix="engram-py-")
    packs = os.path.join(tmp, "packs")
    try:
        subprocess.run([binary, "init", "coach", "--packs-dir", packs], check=True, capture_output=True)
        params = StdioServerParameters(
            command=binary,
            args=["serve", "--packs-dir", packs],
            env={"HOME": tmp, "ENGRAM_NOW": "2026-11-22T10:00:00Z", "PATH": os.environ.get("PATH", "")},
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                check("initialize names the server", init.server_info.name == "engram", init.server_info)
                tools = await session.list_tools()
                names = sorted(t.name for t in tools.tools)
                check("default toolset has at most 16 tools", len(names) <= 16, names)
                for required in ["capture_memory", "load_engram", "list_engrams", "delete_memory", "correct_memory"]:
                    check(f"tool {required} listed", required in names, names)

                r = await session.call_tool("ping", {})
                check("ping", text_of(r) == "pong", text_of(r))
                r = await session.call_tool("capture_memory", {
                    "name": "coach", "category": "preferences", "content": "喜欢早上训练",
                    "summary": "喜欢早上训练", "memory_type": "preference", "tags": ["fitness"],
                })
                check("capture succeeds", not r.is_error and text_of(r).startswith("已记录: [preference] [preferences] 喜欢早上训练"), text_of(r))
                r = await session.call_tool("load_engram", {"name": "coach", "query": "训练时间"})
                t = text_of(r)
                check("load shows the memory", "## 动态记忆" in t and "喜欢早上训练" in t, t[:400])
                r = await session.call_tool("capture_memory", {
                    "name": "coach", "category": "../role", "content": "x", "summary": "x",
                })
                check("bad category is a tool error", r.is_error and "category" in text_of(r), text_of(r))
                r = await session.call_tool("read_engram_file", {"name": "coach", "path": "../../etc/passwd"})
                check("traversal is refused", r.is_error and "未找到文件" in text_of(r), text_of(r))
                prompts = await session.list_prompts()
                check("system prompt listed", any(p.name == "engram-system-prompt" for p in prompts.prompts))
                p = await session.get_prompt("engram-system-prompt")
                check("system prompt names the pack", "<name>coach</name>" in p.messages[0].content.text)
        log = subprocess.run(["git", "-C", os.path.join(packs, "coach"), "log", "--format=%s%n%b"],
                             check=True, capture_output=True, text=True, env=GIT_ENV).stdout
        check("the capture is a commit naming the Python client",
              "capture: preferences — 喜欢早上训练" in log and "Engram-Client: mcp" in log, log)
        await over_http(binary, tmp, packs)
        ended = [m for m in SDK_LOG.messages if "Session termination failed" in m]
        check("sessions end cleanly (DELETE /mcp answered 200 or 204)", not ended, ended)
        check("the SDK logged no warning", not SDK_LOG.messages, SDK_LOG.messages)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def over_http(binary, tmp, packs):
    """`engram serve --http` on a free loopback port: a session that captures and reads, then
    ends (the SDK sends DELETE /mcp when its client closes)."""
    env = {"HOME": tmp, "ENGRAM_NOW": "2026-11-22T10:00:00Z", "PATH": os.environ.get("PATH", "")}
    server = subprocess.Popen(
        [binary, "serve", "--http", "127.0.0.1:0", "--packs-dir", packs],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True,
    )
    try:
        url = None
        for line in server.stderr:
            m = re.search(r"serving MCP over HTTP at (http://\S+)", line)
            if m:
                url = m.group(1)
                break
        check("serve --http says where it listens", url is not None, "no address on stderr")
        if url is None:
            return
        # Keep reading its stderr so the server never blocks writing to it.
        threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
        async with streamable_http_client(url) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                check("HTTP: initialize names the server", init.server_info.name == "engram", init.server_info)
                r = await session.call_tool("capture_memory", {
                    "name": "coach", "category": "preferences", "content": "晚上拉伸",
                    "summary": "晚上拉伸", "memory_type": "preference",
                })
                check("HTTP: capture succeeds", not r.is_error, text_of(r))
                r = await session.call_tool("load_engram", {"name": "coach", "query": "拉伸"})
                check("HTTP: load shows the memory", "晚上拉伸" in text_of(r), text_of(r)[:400])
    finally:
        server.terminate()
        server.wait(timeout=20)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: second_client.py <engram-binary>")
        sys.exit(2)
    asyncio.run(main(sys.argv[1]))
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] else 0)

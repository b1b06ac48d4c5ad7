"""A second, independent MCP client: the official Python SDK drives `engram serve`.

Run by `.ci/run` after `cargo test`: python3 tests/python/second_client.py <engram-binary>
Prints one line per check and a closing `N passed, N failed` line; exits 1 on failure.
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

RESULTS = {"passed": 0, "failed": 0}


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
                             check=True, capture_output=True, text=True).stdout
        check("the capture is a commit naming the Python client",
              "capture: preferences — 喜欢早上训练" in log and "Engram-Client: mcp" in log, log)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: second_client.py <engram-binary>")
        sys.exit(2)
    asyncio.run(main(sys.argv[1]))
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    sys.exit(1 if RESULTS["failed"] else 0)

#!/usr/bin/env python3
"""`search_memory` over MCP on a large pack: latency and the server's memory.

    PY benches/tools/search_bench.py BIN[,BIN2...] [memories=100000]

PY is a Python with the official MCP SDK (`pip install mcp==2.3.0`, as .ci/run
installs it). The pack (`speed`, `memories` synthetic memories, the generator
of `engram bench-search speed`) is written by `MAKER bench-search speed --keep DIR`
(MAKER: env, default the last binary; its speed report is printed too) unless
PACKS=DIR names a packs dir that holds it. Each binary gets its own copy of the
packs dir; `BIN search` runs once on it first, so each finds its own stored
index at HEAD (as a user's would be). Then one `engram serve` per binary is
started over stdio with the SDK's client, and calls alternate between the
servers (same machine load for each):

  1. the first `search_memory` (the server opens the stored index);
  2. 100 `search_memory` calls: p50/p95, then the server's RSS (VmRSS) and peak (VmHWM);
  3. 200 `capture_memory` calls (p50), then RSS;
  4. 100 `search_memory` calls more (the index catches up with the captures): p50/p95, RSS.

Prints the load average before and after. Medians and ratios within one run are
what to compare on a shared machine.
"""
import asyncio
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchstats import loadavg, pct

PACK = "speed"
EN = ["memory", "agent", "server", "rust", "python", "search", "index", "query", "commit", "branch",
      "merge", "deploy", "release", "docker", "kernel", "network", "cache", "latency", "fitness",
      "running", "training", "protein", "coffee", "travel", "tokyo", "kyoto", "hiking", "guitar",
      "music", "family", "doctor", "knee", "recovery", "budget", "meeting", "review", "design",
      "database", "postgres", "schedule", "weekend", "dinner", "recipe", "garden", "flight", "hotel"]
HAN = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经"


def queries(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = []
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.45:
                words.append(HAN[int(len(HAN) * rng.random() ** 3)] + HAN[int(len(HAN) * rng.random() ** 3)])
            else:
                words.append(EN[int(len(EN) * rng.random() ** 2)])
        out.append(" ".join(words))
    return out


def server_pid(packs_dir):
    """The `engram serve` child of this process serving `packs_dir`."""
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if ppid == me and b"serve" in cmd and packs_dir.encode() in cmd:
            return int(pid)
    return None


def memory_mb(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                fields[k] = int(v.split()[0]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


async def timed(session, tool, args):
    t = time.perf_counter()
    r = await session.call_tool(tool, args)
    d = (time.perf_counter() - t) * 1e3
    if r.is_error:
        sys.exit(f"{tool} failed: {r.content}")
    return d


async def main(bins, memories):
    work = tempfile.mkdtemp(prefix="engram-search-bench-")
    try:
        source = os.environ.get("PACKS")
        if not source:
            source = os.path.join(work, "made")
            maker = os.environ.get("MAKER", bins[-1])
            print(f"writing {memories} memories with {maker} bench-search speed --keep …", flush=True)
            r = subprocess.run([maker, "bench-search", "speed", "--memories", str(memories), "--keep", source],
                               capture_output=True, text=True)
            print(r.stdout.strip())
            if r.returncode != 0:
                sys.exit(r.stderr)
        env = {"HOME": work, "PATH": os.environ.get("PATH", "")}
        dirs = []
        for i, b in enumerate(bins):
            d = os.path.join(work, f"packs{i}")
            shutil.copytree(source, d, symlinks=True)
            subprocess.run([b, "search", "memory", "--packs-dir", d], env=env, check=True, capture_output=True)
            dirs.append(d)
        du = subprocess.run(["du", "-sh", os.path.join(dirs[-1], PACK, ".git", "engram")], capture_output=True, text=True)
        print(f"stored index of the last binary: {du.stdout.split()[0] if du.stdout else '?'}")
        print(f"load average before: {loadavg()}")
        async with contextlib.AsyncExitStack() as stack:
            sessions, pids = [], []
            for b, d in zip(bins, dirs):
                params = StdioServerParameters(command=b, args=["serve", "--packs-dir", d], env=env)
                read, write = await stack.enter_async_context(stdio_client(params))
                s = await stack.enter_async_context(ClientSession(read, write))
                await s.initialize()
                sessions.append(s)
                pids.append(server_pid(d))
            report = {b: {} for b in bins}
            for b, s in zip(bins, sessions):
                report[b]["first search ms"] = await timed(s, "search_memory", {"query": "memory agent"})

            async def searches(label, qs):
                times = {b: [] for b in bins}
                for q in qs:
                    for b, s in zip(bins, sessions):
                        times[b].append(await timed(s, "search_memory", {"query": q, "limit": 10}))
                for b, pid in zip(bins, pids):
                    rss, hwm = memory_mb(pid) if pid else (0, 0)
                    report[b][label] = (statistics.median(times[b]), pct(times[b], 0.95), rss, hwm)

            await searches("100 searches", queries(100, 1))
            caps = {b: [] for b in bins}
            rng = random.Random(2)
            for i in range(200):
                args = {"name": PACK, "category": f"bench-{i % 4}", "summary": f"bench capture {i} {rng.choice(EN)}",
                        "content": " ".join(rng.choice(EN) for _ in range(20)) + f" {i}"}
                for b, s in zip(bins, sessions):
                    caps[b].append(await timed(s, "capture_memory", args))
            for b, pid in zip(bins, pids):
                rss, hwm = memory_mb(pid) if pid else (0, 0)
                report[b]["200 captures"] = (statistics.median(caps[b]), pct(caps[b], 0.95), rss, hwm)
            await searches("100 searches after the captures", queries(100, 3))
        print(f"load average after: {loadavg()}\n")
        print(f"| binary | step | p50 ms | p95 ms | RSS MB | peak RSS MB |")
        print("|---|---|---:|---:|---:|---:|")
        for b in bins:
            print(f"| {b} | first search_memory (opens the index) | {report[b]['first search ms']:.1f} | | | |")
            for label in ["100 searches", "200 captures", "100 searches after the captures"]:
                p50, p95, rss, hwm = report[b][label]
                print(f"| {b} | {label} | {p50:.2f} | {p95:.2f} | {rss:.0f} | {hwm:.0f} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1].split(","), int(sys.argv[2]) if len(sys.argv) > 2 else 100_000))

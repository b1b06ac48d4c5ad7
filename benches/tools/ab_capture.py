#!/usr/bin/env python3
"""Paired A/B of `capture_memory` over stdio between engram server binaries.

    python3 benches/tools/ab_capture.py BIN_A,BIN_B [captures=200] [prefill=100]

Starts one `engram serve` per binary, each on its own packs dir, and
alternates single calls between them (a `ping`, then a `capture_memory`), so
every binary sees the same machine load; prints p50/p95 per binary, the CPU
time the server used per capture (all its threads, background packing included,
until it exited) and, with
ENGRAM_TRACE_WRITES=1, the median of every write phase the server reports.
PACKDIRS=dir1,dir2 uses existing packs dirs (one per binary; copy one
prefilled pack, e.g. `capture_loop`'s ENGRAM_LOOP_DIR, with `cp -a`) and
PACKNAME names the pack in them (default `bench`); without PACKDIRS each
server gets a new pack prefilled with `prefill` captures. Standard library only.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CATEGORIES = ["preferences", "user-profile", "projects", "health", "work",
              "travel", "diet", "family", "reading", "habits"]


class Server:
    def __init__(self, binary, packs_dir):
        if not os.environ.get("PACKDIRS"):
            subprocess.run([binary, "init", "bench", "--packs-dir", packs_dir],
                           check=True, capture_output=True)
        self.stderr_path = packs_dir.rstrip("/") + ".stderr"
        self.proc = subprocess.Popen([binary, "serve", "--packs-dir", packs_dir],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(self.stderr_path, "w"))
        self.next_id = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "ab_capture", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def rpc(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit(f"server exited; see {self.stderr_path}")
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                return reply

    def call(self, tool, arguments):
        reply = self.rpc("tools/call", {"name": tool, "arguments": arguments})
        if "error" in reply or reply["result"].get("isError"):
            sys.exit(f"{tool} failed: {reply}")

    def capture(self, i):
        self.call("capture_memory", {
            "name": os.environ.get("PACKNAME", "bench"),
            "category": CATEGORIES[i % len(CATEGORIES)],
            "content": f"第{i}条记忆：用户提到 project-{i % 37} 的进展 (ab {i})",
            "summary": f"ab {i}", "memory_type": "fact", "tags": ["bench"]})

    def close(self):
        """Ends the server (it finishes its packing first); keeps the CPU time all its
        threads used, packing included."""
        self.proc.stdin.close()
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.cpu = usage.ru_utime + usage.ru_stime


def main():
    binaries = sys.argv[1].split(",")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    prefill = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    tmp = tempfile.mkdtemp()
    dirs = (os.environ["PACKDIRS"].split(",") if os.environ.get("PACKDIRS")
            else [os.path.join(tmp, f"p{k}") for k in range(len(binaries))])
    servers = [Server(b, d) for b, d in zip(binaries, dirs)]
    for s in servers:
        for i in range(prefill):
            s.capture(1_000_000 + i)
    captures = [[] for _ in servers]
    pings = [[] for _ in servers]
    for i in range(n):
        for k, s in enumerate(servers):
            t = time.perf_counter()
            s.call("ping", {})
            pings[k].append(time.perf_counter() - t)
            t = time.perf_counter()
            s.capture(i)
            captures[k].append(time.perf_counter() - t)
    for s in servers:
        s.close()
    for k, b in enumerate(binaries):
        times = sorted(captures[k])
        print(f"{b}: capture p50 {statistics.median(times) * 1e3:.3f} ms  "
              f"p95 {times[int(0.95 * n)] * 1e3:.3f} ms  "
              f"ping p50 {statistics.median(pings[k]) * 1e3:.3f} ms  "
              f"server CPU per capture (all threads, until exit) {servers[k].cpu / (n + prefill) * 1e3:.3f} ms")
        phases = {}
        lines = [l for l in open(servers[k].stderr_path) if "engram: write" in l][-n:]
        for line in lines:
            for name, ms in re.findall(r"(\S+)=([\d.]+)ms", line):
                phases.setdefault(name, []).append(float(ms))
        if phases:
            print("   phases (p50):", " ".join(f"{a}={statistics.median(v):.3f}" for a, v in phases.items()))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

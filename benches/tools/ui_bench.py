#!/usr/bin/env python3
"""Time `engram ui` answers on a 10,000-memory pack (BENCHMARKS.md, "engram ui").

    cargo build --release && python3 benches/tools/ui_bench.py target/release/engram [N] [--prefilled PACKS]

Starts `engram ui --port 0 --no-open` on a new packs directory, fills pack `big` with N
memories (default 10,000) through the JSON API (one commit each, as the page makes them), then
times: the first list of the process (every memory file read); the first list and the first
memory history after another process's commit (an `engram serve` over stdio captures one); and
each page and API answer over one kept-alive loopback connection, median / worst of 20 repeats.
Loopback HTTP time is an upper bound of the server's time. Standard library only.

`--prefilled PACKS`: copy the packs directory PACKS (pack `big`, filled as above by any build)
and skip the fill, so two builds are timed on the same pack; the page then starts on a pack
with history it did not write (no write from this process has read anything yet).
`--fill-into PACKS`: only fill the packs directory PACKS (for `--prefilled`; an interrupted
fill goes on from the memories already there) and stop.
What a page keeps in `.git/` between launches (`engram-entry-history`, `engram-memory-files`)
is in it; delete `PACKS/big/.git/engram-*` to time a first launch on a pack never opened.
"""

import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def foreign_capture(binary, packs, env):
    """One capture_memory by another process: `engram serve` over stdio."""
    srv = subprocess.Popen([binary, "serve", "--packs-dir", packs], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    def send(msg):
        srv.stdin.write(json.dumps(msg) + "\n")
        srv.stdin.flush()
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    srv.stdout.readline()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "capture_memory", "arguments": {
        "name": "big", "category": "work", "summary": "from another process", "content": "Written by another client."}}})
    reply = srv.stdout.readline()
    answer = json.loads(reply)
    if "error" in answer or answer.get("result", {}).get("isError"):
        raise SystemExit(f"capture by another process failed: {reply[:300]}")
    srv.stdin.close()
    srv.wait(timeout=30)


def main():
    args = sys.argv[1:]
    prefilled = None
    if "--prefilled" in args:
        i = args.index("--prefilled")
        prefilled = args[i + 1]
        del args[i:i + 2]
    fill_into = None
    if "--fill-into" in args:
        i = args.index("--fill-into")
        fill_into = args[i + 1]
        del args[i:i + 2]
    binary = args[0]
    n = int(args[1]) if len(args) > 1 else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        packs = fill_into or os.path.join(tmp, "packs")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp}
        resume = bool(fill_into) and os.path.isdir(os.path.join(packs, "big"))
        if prefilled:
            shutil.copytree(prefilled, packs, symlinks=True)
        elif not resume:
            subprocess.run([binary, "init", "big", "--packs-dir", packs], check=True, env=env, capture_output=True)
        started = time.perf_counter()
        ui = subprocess.Popen([binary, "ui", "--port", "0", "--no-open", "--packs-dir", packs],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        try:
            url = ui.stdout.readline().strip().removeprefix("engram ui: ")
            authority, token = url.removeprefix("http://").split("/?token=")
            host, port = authority.rsplit(":", 1)
            conn = http.client.HTTPConnection(host, int(port))
            headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

            def call(method, path, body=None):
                nonlocal conn
                t = time.perf_counter()
                try:
                    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
                    res = conn.getresponse()
                except (http.client.RemoteDisconnected, ConnectionError):
                    # The server closed the kept-alive connection: once more on a new one.
                    conn = http.client.HTTPConnection(host, int(port))
                    t = time.perf_counter()
                    conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
                    res = conn.getresponse()
                data = res.read()
                ms = (time.perf_counter() - t) * 1000
                if res.status >= 300:
                    raise SystemExit(f"{method} {path}: {res.status} {data[:300]!r}")
                return ms, data

            t0 = time.perf_counter()
            cats = ["preferences", "projects", "people", "decisions", "notes", "health", "travel", "books", "work", "家庭"]
            start = 0
            if fill_into and resume:
                start = json.loads(call("GET", "/api/packs/big/memories?limit=1")[1])["total"]
                print(f"resuming the fill at {start}")
            for i in range(start, 0 if prefilled else n):
                c = cats[i % len(cats)]
                call("POST", "/api/packs/big/memories", {
                    "category": c, "summary": f"memory {i} about {c}",
                    "content": f"Memory number {i} in {c}: the user said something worth keeping, 第 {i} 条记忆。",
                    "type": "fact", "tags": [f"t{i % 37}"]})
            fill = time.perf_counter() - t0
            if prefilled:
                print(f"copied {prefilled}; page started {(t0 - started) * 1000:.0f} ms before the first read")
            else:
                print(f"filled {n} memories through the API in {fill:.1f} s ({n / fill:.0f} writes/s)")
            if fill_into:
                print(f"reuse it: --prefilled {fill_into}")
                return
            ms, data = call("GET", "/api/packs/big/memories?limit=50")
            print(f"| first list of the process (every memory file read) | {ms:.1f} ms |")
            total = json.loads(data)["total"]
            first_id = json.loads(call("GET", f"/api/packs/big/memories?limit=1&offset={total - 1}")[1])
            foreign_capture(binary, packs, env)
            ms, data = call("GET", "/api/packs/big/memories?limit=50")
            print(f"| first list after another process's commit | {ms:.1f} ms |")
            newest = json.loads(data)["items"][0]["id"]
            ms, _ = call("GET", f"/p/big/history?memory={newest}")
            print(f"| first history of its memory (the index reads the new commits) | {ms:.1f} ms |")
            oldest = first_id["items"][0]["id"]
            runs = [call("GET", f"/p/big/history?memory={oldest}")[0] for _ in range(5)]
            print(f"| history of the oldest memory, median of 5 | {statistics.median(runs):.1f} ms |")
            # More writes from the page; capture answers the new id without reading the list.
            adds = []
            for i in range(20):
                ms, data = call("POST", "/api/packs/big/memories", {"category": "work", "summary": f"last {i}", "content": f"last one {i}"})
                adds.append(ms)
            last_id = json.loads(data)["id"]
            print(f"| POST /api/packs/big/memories (capture, one commit), median of 20 | {statistics.median(adds):.1f} ms | worst {max(adds):.1f} ms |")
            targets = [
                ("GET /api/packs/big/memories?limit=50", "/api/packs/big/memories?limit=50"),
                ("GET /api/packs/big/memories?q=9999&limit=50", "/api/packs/big/memories?q=9999&limit=50"),
                ("GET /api/packs/big/memories?category=work&offset=900", "/api/packs/big/memories?category=work&offset=900"),
                ("GET /api/packs", "/api/packs"),
                ("GET /p/big/memory (page 1)", "/p/big/memory"),
                ("GET /p/big/memory?page=100", "/p/big/memory?page=100"),
                ("GET /p/big/memory?q=记忆 9998", "/p/big/memory?q=%E8%AE%B0%E5%BF%86+9998"),
                ("GET /p/big/history (15 commits with changes and word diffs)", "/p/big/history"),
                ("GET /api/packs/big/history?limit=50", "/api/packs/big/history?limit=50"),
                ("GET /", "/"),
                ("GET /p/big", "/p/big"),
                ("GET /p/big/memory?q=memory 9999 (search engine)", "/p/big/memory?q=memory+9999"),
                ("GET /p/big/memory?tags=t5&category=work", "/p/big/memory?tags=t5&category=work"),
                ("GET /p/big/memory?from=2020-01-01&to=2030-12-31&page=50", "/p/big/memory?from=2020-01-01&to=2030-12-31&page=50"),
                ("GET /p/big/memory?old=1 (expired and archived)", "/p/big/memory?old=1"),
                ("GET /p/big/history?memory=<id> (one memory's commits)", f"/p/big/history?memory={last_id}"),
                ("GET /p/big/file?path=role.md", "/p/big/file?path=role.md"),
                ("GET /notes", "/notes"),
                ("GET /personal", "/personal"),
                ("GET /graph", "/graph"),
            ]
            print(f"load average before the reads: {os.getloadavg()}")
            print("| answer | first after a commit | median of 20 | worst of 20 |")
            print("|---|---:|---:|---:|")
            first_done = False
            for label, path in targets:
                first, _ = call("GET", path)
                runs = [call("GET", path)[0] for _ in range(20)]
                f = f"{first:.1f} ms" if not first_done else "—"
                first_done = True
                print(f"| `{label}` | {f} | {statistics.median(runs):.1f} ms | {max(runs):.1f} ms |")
            print(f"load average after: {os.getloadavg()}")
        finally:
            ui.terminate()
            ui.wait(timeout=10)


if __name__ == "__main__":
    main()

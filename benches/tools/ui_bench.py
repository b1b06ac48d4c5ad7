#!/usr/bin/env python3
"""Time `engram ui` answers on a 10,000-memory pack (BENCHMARKS.md, "engram ui").

    cargo build --release && python3 benches/tools/ui_bench.py target/release/engram [N] [--prefilled PACKS]
    python3 benches/tools/ui_bench.py OLD,NEW 10000 --prefilled PACKS [--rounds R]   # A/B

Starts `engram ui --port 0 --no-open` on a new packs directory, fills pack `big` with N
memories (default 10,000) through the JSON API (one commit each, as the page makes them), then
times: the first list of the process (every memory file read); the first list and the first
memory history after another process's commit (an `engram serve` over stdio captures one); and
each page and API answer over one kept-alive loopback connection, median / worst of 20 repeats.
Every answer is given as two times: the server's own (its `Server-Timing: app;dur=` header,
from the request's arrival at the router to its answer; "—" for a build without the header)
and the loopback wall time the client saw (which bounds it, and adds the client and the
network stack). Standard library only.

`--prefilled PACKS`: copy the packs directory PACKS (pack `big`, filled as above by any build)
and skip the fill, so two builds are timed on the same pack; the page then starts on a pack
with history it did not write (no write from this process has read anything yet).
`--fill-into PACKS`: only fill the packs directory PACKS (for `--prefilled`; an interrupted
fill goes on from the memories already there) and stop.
What a page keeps in `.git/` between launches (`engram-entry-history`, `engram-memory-files`)
is in it; delete `PACKS/big/.git/engram-*` to time a first launch on a pack never opened.

A/B (several binaries, comma-separated, with `--prefilled`): only the first answers, for each
binary in turn, `--rounds` times (default 5), each on a fresh copy of PACKS: the first
`GET /p/big/memory` of a launch, the first `GET /p/big/memory` after another process's commit,
and the first `GET /api/packs/big/memories?limit=50` after another; then the medians per binary
(server / wall) and the load average. The copy's `.git/engram-*` files are what the previous
launch of the same binary left when `--warm` is given (each binary keeps its own copy between
its rounds), else those of PACKS.
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


def foreign_capture(binary, packs, env, i=0):
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
        "name": "big", "category": "work", "summary": f"from another process {i}",
        "content": f"Written by another client, number {i}."}}})
    reply = srv.stdout.readline()
    answer = json.loads(reply)
    if "error" in answer or answer.get("result", {}).get("isError"):
        raise SystemExit(f"capture by another process failed: {reply[:300]}")
    srv.stdin.close()
    srv.wait(timeout=30)


class Timed:
    """One answer's times: the server's own (None without the header) and the wall time."""

    def __init__(self, server, wall):
        self.server, self.wall = server, wall

    def __str__(self):
        return f"{ms(self.server)} / {ms(self.wall)}"


def ms(v):
    return "—" if v is None else f"{v:.1f} ms"


def server_ms(res):
    """The `app;dur=<ms>` of a `Server-Timing` header, if any."""
    for part in (res.getheader("Server-Timing") or "").split(","):
        fields = [f.strip() for f in part.split(";")]
        if fields[0] == "app":
            for f in fields[1:]:
                if f.startswith("dur="):
                    return float(f[4:])
    return None


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def worst(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


class Ui:
    """A running `engram ui` on `packs`, and one kept-alive connection to it."""

    def __init__(self, binary, packs, env):
        self.proc = subprocess.Popen([binary, "ui", "--port", "0", "--no-open", "--packs-dir", packs],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        url = self.proc.stdout.readline().strip().removeprefix("engram ui: ")
        authority, token = url.removeprefix("http://").split("/?token=")
        self.host, port = authority.rsplit(":", 1)
        self.port = int(port)
        self.conn = http.client.HTTPConnection(self.host, self.port)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(self, method, path, body=None):
        """(Timed, body bytes); stops the bench on an error status."""
        payload = json.dumps(body) if body is not None else None
        t = time.perf_counter()
        try:
            self.conn.request(method, path, body=payload, headers=self.headers)
            res = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionError):
            # The server closed the kept-alive connection: once more on a new one.
            self.conn = http.client.HTTPConnection(self.host, self.port)
            t = time.perf_counter()
            self.conn.request(method, path, body=payload, headers=self.headers)
            res = self.conn.getresponse()
        data = res.read()
        wall = (time.perf_counter() - t) * 1000
        if res.status >= 300:
            raise SystemExit(f"{method} {path}: {res.status} {data[:300]!r}")
        return Timed(server_ms(res), wall), data

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def full(binary, n, prefilled, fill_into):
    with tempfile.TemporaryDirectory() as tmp:
        packs = fill_into or os.path.join(tmp, "packs")
        env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp}
        resume = bool(fill_into) and os.path.isdir(os.path.join(packs, "big"))
        if prefilled:
            shutil.copytree(prefilled, packs, symlinks=True)
        elif not resume:
            subprocess.run([binary, "init", "big", "--packs-dir", packs], check=True, env=env, capture_output=True)
        started = time.perf_counter()
        ui = Ui(binary, packs, env)
        call = ui.call
        try:
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
            print("| answer | server / wall |")
            print("|---|---:|")
            t, data = call("GET", "/api/packs/big/memories?limit=50")
            print(f"| first list of the process (every memory file read) | {t} |")
            total = json.loads(data)["total"]
            first_id = json.loads(call("GET", f"/api/packs/big/memories?limit=1&offset={total - 1}")[1])
            foreign_capture(binary, packs, env)
            t, data = call("GET", "/api/packs/big/memories?limit=50")
            print(f"| first list after another process's commit | {t} |")
            newest = json.loads(data)["items"][0]["id"]
            t, _ = call("GET", f"/p/big/history?memory={newest}")
            print(f"| first history of its memory (the index reads the new commits) | {t} |")
            oldest = first_id["items"][0]["id"]
            runs = [call("GET", f"/p/big/history?memory={oldest}")[0] for _ in range(5)]
            print(f"| history of the oldest memory, median of 5 | {ms(median(r.server for r in runs))} / "
                  f"{ms(median(r.wall for r in runs))} |")
            # More writes from the page; capture answers the new id without reading the list.
            adds = []
            for i in range(20):
                t, data = call("POST", "/api/packs/big/memories", {"category": "work", "summary": f"last {i}", "content": f"last one {i}"})
                adds.append(t)
            last_id = json.loads(data)["id"]
            print(f"| POST /api/packs/big/memories (capture, one commit), median of 20 | "
                  f"{ms(median(r.server for r in adds))} / {ms(median(r.wall for r in adds))} | "
                  f"worst {ms(worst(r.server for r in adds))} / {ms(worst(r.wall for r in adds))} |")
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
                ("GET /p/big/activity (90 days of commits by client)", "/p/big/activity"),
                ("GET /sync", "/sync"),
                ("GET /notes", "/notes"),
                ("GET /personal", "/personal"),
                ("GET /graph", "/graph"),
            ]
            print(f"load average before the reads: {os.getloadavg()}")
            print("| answer (server / wall) | first after a commit | median of 20 | worst of 20 |")
            print("|---|---:|---:|---:|")
            first_done = False
            for label, path in targets:
                first, _ = call("GET", path)
                runs = [call("GET", path)[0] for _ in range(20)]
                f = str(first) if not first_done else "—"
                first_done = True
                print(f"| `{label}` | {f} | {ms(median(r.server for r in runs))} / {ms(median(r.wall for r in runs))} "
                      f"| {ms(worst(r.server for r in runs))} / {ms(worst(r.wall for r in runs))} |")
            print(f"load average after: {os.getloadavg()}")
        finally:
            ui.stop()


FIRSTS = [
    "first `GET /p/big/memory` of a launch",
    "first `GET /p/big/memory` after another process's commit",
    "first `GET /api/packs/big/memories?limit=50` after another's commit",
]


def firsts(binary, packs, env):
    """The first answers of one launch on `packs` (see the module doc)."""
    ui = Ui(binary, packs, env)
    try:
        out = [ui.call("GET", "/p/big/memory")[0]]
        foreign_capture(binary, packs, env, 1)
        out.append(ui.call("GET", "/p/big/memory")[0])
        foreign_capture(binary, packs, env, 2)
        out.append(ui.call("GET", "/api/packs/big/memories?limit=50")[0])
        return out
    finally:
        ui.stop()


def ab(binaries, prefilled, rounds, warm):
    results = {b: [] for b in binaries}
    loads = [os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp}
        kept = {}
        for r in range(rounds):
            for k, b in enumerate(binaries):
                packs = os.path.join(tmp, f"packs-{k}-{r}")
                shutil.copytree(prefilled, packs, symlinks=True)
                git = os.path.join(packs, "big", ".git")
                for name, text in kept.get(b, {}).items():
                    with open(os.path.join(git, name), "wb") as f:
                        f.write(text)
                times = firsts(b, packs, env)
                results[b].append(times)
                if warm:
                    kept[b] = {n: open(os.path.join(git, n), "rb").read()
                               for n in os.listdir(git) if n.startswith("engram-") and os.path.isfile(os.path.join(git, n))}
                shutil.rmtree(packs)
                print(f"round {r + 1} {b}: " + " | ".join(str(t) for t in times) + f" | load {os.getloadavg()[0]:.2f}",
                      flush=True)
                loads.append(os.getloadavg())
    print(f"\nmedians of {rounds} rounds (server / wall); load average (1 min) "
          f"{min(l[0] for l in loads):.2f}–{max(l[0] for l in loads):.2f}")
    print("| answer | " + " | ".join(binaries) + " |")
    print("|---|" + "---:|" * len(binaries))
    for i, label in enumerate(FIRSTS):
        cells = [f"{ms(median(t[i].server for t in results[b]))} / {ms(median(t[i].wall for t in results[b]))}"
                 for b in binaries]
        print(f"| {label} | " + " | ".join(cells) + " |")


def main():
    args = sys.argv[1:]
    def option(name):
        if name in args:
            i = args.index(name)
            value = args[i + 1]
            del args[i:i + 2]
            return value
        return None
    prefilled = option("--prefilled")
    fill_into = option("--fill-into")
    rounds = int(option("--rounds") or 5)
    warm = "--warm" in args
    if warm:
        args.remove("--warm")
    binaries = args[0].split(",")
    n = int(args[1]) if len(args) > 1 else 10_000
    if len(binaries) > 1:
        if not prefilled:
            raise SystemExit("an A/B run needs --prefilled PACKS")
        ab(binaries, prefilled, rounds, warm)
    else:
        full(binaries[0], n, prefilled, fill_into)


if __name__ == "__main__":
    main()

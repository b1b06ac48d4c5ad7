#!/usr/bin/env python3
"""engram beside the Python Engram server: `capture_memory` and `load_engram` on one large pack.

    python3 benches/tools/py_compare.py ENGRAM_BIN [memories=10000] [rounds=7] [captures=50] [loads=10] \\
        -- PY_SERVER_CMD [ARG...]

PY_SERVER_CMD starts the Python server (github DazhuangJammy/Engram) over stdio; `--packs-dir DIR`
is appended. With a venv holding it (its uv.lock pins mcp 1.26.0; mcp 2.x lacks FastMCP):

    git clone https://github.com/DazhuangJammy/Engram engram-py
    python3 -m venv py-venv && py-venv/bin/pip install -e engram-py 'mcp==1.26.0'
    python3 benches/tools/py_compare.py target/release/engram -- py-venv/bin/engram-server

It writes ONE pack (`bench`) of `memories` entries straight in the reference's file format
(10 category files, `memory/_index_full.md`, the hot `memory/_index.md` as the reference derives
it, role/workflow/rules, knowledge and examples indexes), then gives each server its own copy:
the Python server a plain folder in its packs dir, engram the same folder through
`engram install DIR` (its `adopt:` commit: a git repository with one commit). Both start over
stdio from their own empty working directory with HOME there (the Python server creates
`.claude/engram` starter packs in its cwd); both are driven by the same stdlib JSON-RPC client.

Before timing, one `load_engram` on each shows what it returns (characters, memory lines), and
`warmup` captures (default 200, env WARMUP) run on each: engram's first captures after adopting
a flat 10,000-line index roll it into segments 64 lines at a time, a one-off cost of a migrated
pack (its p50 is printed). Then `rounds` rounds, the servers' order alternating each round: on
each server `captures` captures, then `loads` loads (each with a new query, as a new conversation
would). Prints per server and tool the median of the rounds' p50s, the p50/p95 of all calls,
the ratio Python / engram, and the CPU time the server process used per call (all its threads
and the children it waited for; less sensitive than wall time to a busy machine); the load
average before and after; and at the end the entries each pack's full index holds (the
captures must have landed in both). ENGRAM_SERVE_ARGS adds
arguments to `engram serve` (e.g. `--auto-trace`: the Python server writes a tool trace, one
more append and index rebuild, after every capture and every load with a new query; engram
does only with that flag). Standard library only.
"""
import json
import os
import select
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchstats import loadavg, pct

PACK = "bench"
CATEGORIES = ["preferences", "user-profile", "projects", "health", "work",
              "travel", "diet", "family", "reading", "habits"]
TYPES = ["fact", "preference", "decision", "history", "general"]
WORDS = ["跑步", "膝盖", "咖啡", "东京", "项目", "发布", "预算", "会议", "周末", "晚饭", "review",
         "rust", "python", "deploy", "kernel", "cache", "latency", "guitar", "garden", "flight"]
START_TIMEOUT = 120
BASE = time.time() - 86400 * 30 - 10**6 * 60


def ts_of(i):
    """Minute timestamps in order, ending well before now (none is in the future)."""
    t = time.gmtime(BASE + i * 60)
    return time.strftime("%Y-%m-%d %H:%M", t)


def write_pack(root, n):
    """One pack in the reference's format, with `n` memories (as its capture_memory writes them)."""
    pack = os.path.join(root, PACK)
    for d in ("memory", "knowledge", "examples"):
        os.makedirs(os.path.join(pack, d))
    meta = {"name": PACK, "author": "py_compare", "version": "1.0.0",
            "description": "基准测试记忆包 benchmark pack", "tags": ["bench"],
            "knowledge_count": 1, "examples_count": 1}
    files = {
        "meta.json": json.dumps(meta, ensure_ascii=False, indent=2) + "\n",
        "role.md": "# 角色\n\n你是一位长期陪伴用户的私人助理，记得用户的习惯与计划。\n",
        "workflow.md": "# 工作流程\n\n1. 先读动态记忆。\n2. 回答问题。\n3. 记录新的偏好。\n",
        "rules.md": "# 规则\n\n- 不编造用户信息。\n\n## 记忆规则\n- 用户的偏好、计划、决定都要记录。\n",
        "knowledge/_index.md": "## 知识索引\n\n- `knowledge/习惯.md` - 用户习惯的整理方法。\n",
        "knowledge/习惯.md": "# 习惯\n\n每周回顾一次。\n",
        "examples/_index.md": "## 案例索引\n\n- `examples/周计划.md` - 一次周计划对话。\n  uses: knowledge/习惯.md\n",
        "examples/周计划.md": "---\nid: bench_周计划\ntitle: 周计划\nuses:\n  - knowledge/习惯.md\n---\n\n对话示例。\n",
    }
    for rel, text in files.items():
        with open(os.path.join(pack, rel), "w", encoding="utf-8") as f:
            f.write(text)
    blocks = {c: [] for c in CATEGORIES}
    index = []
    for i in range(n):
        cat, typ, ts = CATEGORIES[i % len(CATEGORIES)], TYPES[i % len(TYPES)], ts_of(i)
        w = [WORDS[(i * k + 3) % len(WORDS)] for k in (1, 7, 13)]
        content = f"第{i}条记忆：用户提到{w[0]}和{w[1]}，并说 {w[2]} 的计划在第{i % 52}周 (prefill {i})"
        blocks[cat].append(f"\n---\n[{ts}] type:{typ} tags:{w[0]}\n{content}\n")
        index.append(f"- `memory/{cat}.md` [{ts}] [{typ}] [{w[0]}] 记忆{i} {w[1]} {w[2]}\n")
    for cat, bs in blocks.items():
        with open(os.path.join(pack, "memory", f"{cat}.md"), "w", encoding="utf-8") as f:
            f.write("".join(bs))
    with open(os.path.join(pack, "memory", "_index_full.md"), "w", encoding="utf-8") as f:
        f.write("".join(index))
    # The hot index as the reference's _rebuild_hot_index derives it.
    latest = {}
    for i in reversed(range(n)):
        latest.setdefault(CATEGORIES[i % len(CATEGORIES)], i)
    hot = []
    if latest:
        hot.append("## 分类摘要\n")
        for cat in sorted(latest):
            i = latest[cat]
            line = index[i]
            summary = line.split("] ", 3)[-1].strip()
            hot.append(f"- `{cat}` [{ts_of(i)}] [{TYPES[i % len(TYPES)]}] {summary}\n")
        hot.append("\n## 最近记忆（最多50条）\n")
    hot.extend(index[-50:])
    with open(os.path.join(pack, "memory", "_index.md"), "w", encoding="utf-8") as f:
        f.write("".join(hot))
    open(os.path.join(pack, "memory", "_onboarded"), "w").close()
    return pack


class Server:
    """One MCP server over stdio, newline-delimited JSON-RPC."""

    def __init__(self, label, argv, cwd, env):
        self.label = label
        self.stderr_path = cwd.rstrip("/") + ".stderr"
        try:
            self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=open(self.stderr_path, "w"))
        except OSError as e:
            sys.exit(f"{label}: cannot start {shlex.join(argv)}: {e}")
        self.argv = argv
        self.next_id = 0
        self.buf = b""
        reply = self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "py_compare", "version": "1"}},
                         timeout=START_TIMEOUT)
        if "error" in reply:
            self.fail(f"initialize failed: {reply['error']}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = {t["name"] for t in self.rpc("tools/list", {})["result"]["tools"]}
        missing = {"capture_memory", "load_engram"} - tools
        if missing:
            self.fail(f"the server has no tool {', '.join(sorted(missing))}")

    def fail(self, why):
        try:
            with open(self.stderr_path, errors="replace") as f:
                tail = f.read()[-3000:]
        except OSError:
            tail = ""
        if self.proc.poll() is None:
            self.proc.kill()
        sys.exit(f"{self.label} server ({shlex.join(self.argv)}): {why}\n--- its stderr (end) ---\n{tail}")

    def send(self, message):
        try:
            self.proc.stdin.write((json.dumps(message, ensure_ascii=False) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.fail(f"exited (status {self.proc.wait()}) before it could be sent a request")

    def readline(self, deadline):
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self.fail("no answer in time (did it start?)")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self.fail(f"exited (status {self.proc.wait()})")
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def rpc(self, method, params, timeout=None):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            line = self.readline(deadline)
            if not line.strip():
                continue
            try:
                reply = json.loads(line)
            except ValueError:
                self.fail(f"wrote a line that is not JSON on stdout: {line[:200]!r}")
            if reply.get("id") == self.next_id:
                return reply

    def call(self, tool, arguments):
        """The tool's text and the call's wall time in ms."""
        t = time.perf_counter()
        reply = self.rpc("tools/call", {"name": tool, "arguments": arguments})
        ms = (time.perf_counter() - t) * 1e3
        if "error" in reply or reply["result"].get("isError"):
            self.fail(f"{tool} failed: {json.dumps(reply, ensure_ascii=False)[:500]}")
        text = "".join(c.get("text", "") for c in reply["result"].get("content", []))
        if text.startswith("未找到") or "失败" in text[:40]:
            self.fail(f"{tool} answered: {text[:300]}")
        return text, ms

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def capture_args(i):
    return {"name": PACK, "category": CATEGORIES[i % len(CATEGORIES)],
            "content": f"第{i}条新记忆：用户提到 project-{i % 37} 的进展，{WORDS[i % len(WORDS)]} (bench {i})",
            "summary": f"新记忆 {i} {WORDS[(i * 7) % len(WORDS)]}", "memory_type": "fact", "tags": ["bench"]}


def load_args(i):
    return {"name": PACK, "query": f"{WORDS[i % len(WORDS)]} {WORDS[(i * 3 + 1) % len(WORDS)]} 第{i}次对话"}


def entry_count(pack):
    """Index lines of the full index: the head plus engram's rolled segments; tool traces apart."""
    files = [os.path.join(pack, "memory", "_index_full.md")]
    seg = os.path.join(pack, "memory", "_log", "_index_full")
    if os.path.isdir(seg):
        files += [os.path.join(seg, f) for f in os.listdir(seg) if f.endswith(".md")]
    entries = traces = 0
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("- `memory/tool-trace.md`"):
                    traces += 1
                elif line.startswith("- `memory/"):
                    entries += 1
    return entries, traces


def cpu_ms(pid):
    """User + system CPU time so far of a process (all its threads) and of the children it
    waited for (engram's `git gc --auto`), in ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) * 1e3 / os.sysconf("SC_CLK_TCK")


def main():
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") < 1 or argv.index("--") == len(argv) - 1:
        sys.exit(__doc__)
    cut = argv.index("--")
    engram_bin, nums, py_cmd = argv[0], [int(x) for x in argv[1:cut]], argv[cut + 1:]
    memories, rounds, captures, loads = (nums + [10_000, 7, 50, 10][len(nums):])[:4]
    warmup = int(os.environ.get("WARMUP", "200"))
    engram_bin = os.path.abspath(engram_bin) if os.sep in engram_bin else engram_bin
    if os.sep in py_cmd[0]:
        py_cmd[0] = os.path.abspath(py_cmd[0])
    work = tempfile.mkdtemp(prefix="engram-py-compare-")
    servers = []
    try:
        t = time.perf_counter()
        source = write_pack(os.path.join(work, "source"), memories)
        print(f"pack `{PACK}`: {memories} memories in the reference format, written in "
              f"{time.perf_counter() - t:.1f} s", flush=True)
        dirs = {}
        for label in ("engram", "python"):
            home = os.path.join(work, label)
            os.makedirs(os.path.join(home, "cwd"))
            dirs[label] = (os.path.join(home, "packs"), os.path.join(home, "cwd"))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        py_packs, py_cwd = dirs["python"]
        os.makedirs(py_packs)
        shutil.copytree(source, os.path.join(py_packs, PACK))
        en_packs, en_cwd = dirs["engram"]
        en_env = dict(env, HOME=en_cwd)
        t = time.perf_counter()
        try:
            r = subprocess.run([engram_bin, "install", source, "--packs-dir", en_packs], env=en_env,
                               capture_output=True, text=True)
        except OSError as e:
            sys.exit(f"cannot run {engram_bin}: {e}")
        if r.returncode != 0:
            sys.exit(f"engram install failed: {r.stdout}{r.stderr}")
        print(f"engram install (adopt: commit of the copy): {time.perf_counter() - t:.1f} s", flush=True)
        serve_extra = shlex.split(os.environ.get("ENGRAM_SERVE_ARGS", ""))
        servers = [
            Server("engram", [engram_bin, "serve", "--packs-dir", en_packs, *serve_extra], en_cwd, en_env),
            Server("python", [*py_cmd, "--packs-dir", py_packs], py_cwd, dict(env, HOME=py_cwd)),
        ]
        print("first load_engram (what each returns):")
        for s in servers:
            text, ms = s.call("load_engram", load_args(-1))
            lines = sum(1 for l in text.splitlines() if l.lstrip().startswith("- `memory/"))
            print(f"  {s.label}: {ms:.1f} ms, {len(text)} characters, {lines} memory index lines", flush=True)
        for s in servers:
            times = [s.call("capture_memory", capture_args(1_000_000 + i))[1] for i in range(warmup)]
            if times:
                print(f"  {s.label}: {warmup} warm-up captures p50 {statistics.median(times):.2f} ms, "
                      f"max {max(times):.1f} ms", flush=True)
        before = loadavg()
        print(f"load average before: {before}   ({time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())})",
              flush=True)
        per_round = {(s.label, tool): [] for s in servers for tool in ("capture", "load")}
        every = {key: [] for key in per_round}
        cpu = {key: 0.0 for key in per_round}
        n = 0
        for r in range(rounds):
            order = servers if r % 2 == 0 else servers[::-1]
            for s in order:
                t0 = cpu_ms(s.proc.pid)
                c = [s.call("capture_memory", capture_args(n + i))[1] for i in range(captures)]
                t1 = cpu_ms(s.proc.pid)
                l_ = [s.call("load_engram", load_args(n + i))[1] for i in range(loads)]
                cpu[(s.label, "capture")] += t1 - t0
                cpu[(s.label, "load")] += cpu_ms(s.proc.pid) - t1
                for tool, v in (("capture", c), ("load", l_)):
                    if v:
                        per_round[(s.label, tool)].append(statistics.median(v))
                        every[(s.label, tool)] += v
            n += max(captures, loads)
            print(f"  round {r + 1}/{rounds}: " + "  ".join(
                f"{k[0]} {k[1]} {v[-1]:.2f}" for k, v in per_round.items() if v), flush=True)
        after = loadavg()
        newest = capture_args(n - max(captures, loads) + captures - 1)["summary"] if captures else ""
        final = []
        for s in servers:
            text = s.call("load_engram", load_args(n))[0]
            final.append(f"{s.label} {len(text)} characters, newest capture "
                         f"{'shown' if newest in text else 'MISSING'}")
            s.close()
        print(f"load average after: {after}   ({time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())})\n")
        print(f"{memories} memories, {rounds} rounds x ({captures} captures + {loads} loads) per server")
        print("final load_engram: " + "; ".join(final) + "\n")
        print("| tool | engram p50 ms | python p50 ms | python / engram | engram all p50 / p95 "
              "| python all p50 / p95 | CPU ms per call engram / python |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for tool, calls in (("capture_memory", "capture"), ("load_engram", "load")):
            e, p = per_round[("engram", calls)], per_round[("python", calls)]
            if not e:
                continue
            em, pm = statistics.median(e), statistics.median(p)
            ea, pa = every[("engram", calls)], every[("python", calls)]
            print(f"| {tool} | {em:.2f} | {pm:.2f} | {pm / em:.1f}x | "
                  f"{statistics.median(ea):.2f} / {pct(ea, 0.95):.2f} | {statistics.median(pa):.2f} / {pct(pa, 0.95):.2f} | "
                  f"{cpu[('engram', calls)] / len(ea):.2f} / {cpu[('python', calls)] / len(pa):.2f} |")
        print("\n(p50 columns: median over rounds of each round's p50; CPU: the server process, all its "
              f"threads and waited-for children, {1e3 / os.sysconf('SC_CLK_TCK'):.0f} ms ticks, over all timed calls)")
        made = warmup + rounds * captures
        for label in ("engram", "python"):
            entries, traces = entry_count(os.path.join(dirs[label][0], PACK))
            print(f"{label}: full index holds {entries} entries (expected {memories + made}), "
                  f"{traces} tool traces")
    finally:
        for s in servers:
            if s.proc.poll() is None:
                s.proc.kill()
        if os.environ.get("KEEP"):
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Soak test of the HTTP service: mixed traffic, hostile clients, a compaction, a ``kill -9``
and a restart.

    python -m benchmarks.service.soak [--duration 600] [--concurrency N] [--embedder hashing]
                              [--probe-seconds 8] [--kill-at 0.5] [--compact-at 0.3]
                              [--hostile-at 0.2] [--llm-delay 4] [--cli-every 15]
                              [--max-pending 16] [--seed 0] [--out benchmarks/results/soak.md]

Builds one index from ``examples/sample`` (the folder; ``--embedder``, default the model-free
``hashing``), starts the real server on a free 127.0.0.1 port
(:mod:`benchmarks.service.server_process`), measures the saturating concurrency of
``naive`` retrievals (the smallest concurrency within 10% of the best throughput, unless
``--concurrency`` is given), then sends mixed traffic with twice that many workers for
``--duration`` seconds: retrievals in every served mode, batch retrievals, answers, document
inserts and deletes, and status reads. During the run it compacts the index with
``graphstrata compact`` beside the live server (at ``--compact-at`` of the duration), kills
the server with SIGKILL (at ``--kill-at``) and starts it again on the same index, while the
workers keep going.

The hostile side (issue 51, :mod:`benchmarks.service.soak_adversaries`): the server's LLM is a
loopback upstream that takes ``--llm-delay`` seconds per answer (every ``/v1/answer`` waits on
it, and the server's inserts too); from ``--hostile-at`` of the duration on, the mix's
answers start (before, they are retrievals: the calm phase), a client sends maximal-bound ``graph`` batches
and ``graphstrata insert`` commits beside the server every ``--cli-every`` seconds. One
connection sends plain ``naive`` retrievals throughout: its p99 before the hostile clients
start (calm) and after is the figure to compare (target: within 3x).

Writes are tracked: an insert or delete answered 202 is *acknowledged*, and *committed*
once the server reported its operation ``succeeded``. After the restart and again at the
end (over HTTP, then by opening the index directly) every committed insert must be present
and every committed delete absent. The server's RSS and the 1-minute load average are
sampled over time.

Writes the report to ``--out`` (Markdown) and prints a JSON summary. Exits 1 when any
response was a 5xx or any committed write was lost. Every request goes to 127.0.0.1 and
every loop is bounded by the duration.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, RESULTS, command_line, load1, log, machine, percentile
from benchmarks.service.soak_adversaries import Adversaries, max_bound_batch, slow_upstream

SAMPLE_DIR = REPO / "examples" / "sample"
SAMPLE_QA = REPO / "examples" / "sample_qa.jsonl"
PROBE_CONCURRENCIES = (1, 2, 4, 8, 16)
#: Request kinds and their weights in the mix.
MIX = (
    ("retrieve", 58),
    ("batch", 5),
    ("answer", 5),
    ("insert", 12),
    ("delete", 5),
    ("status", 15),
)
REQUEST_TIMEOUT_S = 120.0
#: How long a committed document may take to be served before it counts as lost: the bound
#: the soak already reports for CLI commits ("never within 60 s").
SERVE_GRACE_S = 60.0


def rss_mib(pid: int | None) -> float | None:
    """Resident memory of a process, from /proc (None when it is gone or unknown)."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


# ---------------------------------------------------------------------------- the index
def build_index(path: Path, embedder: str) -> dict[str, Any]:
    """The soak index: the sample folder, with ``embedder`` and the extractive LLM."""
    from graphstrata.bindings.api import Index

    start = time.perf_counter()
    index = Index.create(path, embedder=embedder)
    report = index.insert_path(SAMPLE_DIR)
    modes = sorted(index.modes)
    del index
    return {
        "seconds": round(time.perf_counter() - start, 1),
        "documents": report.docs_added,
        "modes": modes,
    }


def sample_sentences() -> list[str]:
    out: list[str] = []
    for file in sorted(SAMPLE_DIR.rglob("*.md")):
        text = file.read_text(encoding="utf-8")
        out.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) > 5)
    return out


def questions() -> list[str]:
    with open(SAMPLE_QA, encoding="utf-8") as fh:
        return [json.loads(line)["question"] for line in fh if line.strip()]


# ---------------------------------------------------------------------------- the server
class Server:
    """The server subprocess of one generation (restarted after the kill)."""

    def __init__(self, index: Path, args: list[str]):
        self.index = index
        self.args = args
        self.generation = 0
        self.url = ""
        self.pid: int | None = None
        self.up = asyncio.Event()
        self._stack = contextlib.ExitStack()
        self._handle: Any = None
        self.outputs: list[str] = []

    def _start_blocking(self) -> None:
        from benchmarks.service.server_process import server_process

        self._stack = contextlib.ExitStack()
        self._handle = self._stack.enter_context(server_process(self.index, self.args))
        self.url = self._handle.url
        self.pid = self._handle.proc.pid

    async def start(self) -> float:
        """Start a new generation; the seconds it took to listen."""
        t0 = time.perf_counter()
        await asyncio.to_thread(self._start_blocking)
        self.generation += 1
        self.up.set()
        return time.perf_counter() - t0

    async def kill9(self) -> None:
        """SIGKILL the server (no shutdown of any kind), then reap it."""
        self.up.clear()
        assert self.pid is not None
        os.kill(self.pid, signal.SIGKILL)
        await asyncio.to_thread(self._close_blocking)

    async def stop(self) -> None:
        """SIGTERM (graceful), as at the end of a run."""
        self.up.clear()
        await asyncio.to_thread(self._close_blocking)

    def _close_blocking(self) -> None:
        self._stack.close()
        if self._handle is not None:
            self.outputs.append(self._handle.output)
        self.pid = None


# ---------------------------------------------------------------------------- the ledger
@dataclass
class Ledger:
    """Everything the traffic saw, and the writes it must find again."""

    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    pending: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # op -> kind, doc, gen
    present: set[str] = field(default_factory=set)  # committed inserts (not deleted since)
    absent: set[str] = field(default_factory=set)  # committed deletes
    unknown: set[str] = field(default_factory=set)  # acknowledged, fate unknown (kill)
    deleting: set[str] = field(default_factory=set)
    op_outcomes: Counter[str] = field(default_factory=Counter)
    failed_ops: list[str] = field(default_factory=list)
    inserted: int = 0
    next_doc: int = 0
    last_answer: float = 0.0
    longest_gap: float = 0.0  # seconds without any answer while the server was up

    def record(self, kind: str, status: int, seconds: float, body: bytes) -> None:
        now = time.monotonic()
        if self.last_answer:
            self.longest_gap = max(self.longest_gap, now - self.last_answer)
        self.last_answer = now
        self.statuses[(kind, status)] += 1
        if status >= 500:
            self.errors["5xx"] += 1
            if len(self.server_errors) < 10:
                self.server_errors.append(f"{kind} {status}: {body[:300].decode(errors='replace')}")
        if 200 <= status < 300:
            self.latencies.setdefault(kind, []).append(seconds * 1000)

    def settle(self, op: dict[str, Any]) -> None:
        """An operation finished: move its document to present/absent."""
        kind, doc_id, _ = self.pending.pop(op["id"])
        self.op_outcomes[f"{kind}:{op['status']}"] += 1
        if op["status"] == "succeeded":
            if kind == "insert":
                self.present.add(doc_id)
            else:
                self.deleting.discard(doc_id)
                self.present.discard(doc_id)
                self.absent.add(doc_id)
        else:
            if len(self.failed_ops) < 10:
                self.failed_ops.append(json.dumps(op.get("error"))[:300])
            self.deleting.discard(doc_id)
            if kind == "insert":
                self.unknown.add(doc_id)

    def lose_generation(self, generation: int) -> int:
        """The server of ``generation`` died: its unfinished operations' fate is unknown."""
        lost = [op_id for op_id, (_, _, gen) in self.pending.items() if gen == generation]
        for op_id in lost:
            kind, doc_id, _ = self.pending.pop(op_id)
            self.unknown.add(doc_id)
            self.deleting.discard(doc_id)
            if kind == "delete":
                self.present.discard(doc_id)
        return len(lost)


# ---------------------------------------------------------------------------- traffic
class Client:
    """One keep-alive raw HTTP/1.1 connection to the current server generation."""

    def __init__(self, server: Server):
        self.server = server
        self.generation = -1
        self.conn: Any = None

    async def call(self, method: str, path: str, payload: Any = None) -> tuple[int, bytes, int]:
        """(status, body, generation); status 0 for a transport failure."""
        from benchmarks.service.loadgen import RawConnection

        await self.server.up.wait()
        generation = self.server.generation
        if self.conn is None or self.generation != generation:
            if self.conn is not None:
                await self.conn.close()
            self.conn = RawConnection(self.server.url, {})
            self.generation = generation
        body = b"" if payload is None else json.dumps(payload).encode()
        request = self.conn.request_bytes(path, body, method)
        try:
            status, data = await asyncio.wait_for(self.conn.send(request), REQUEST_TIMEOUT_S)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
            await self.conn.close()
            return 0, f"{type(exc).__name__}: {exc}".encode(), generation
        return status, data, generation

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()


@dataclass
class Soak:
    server: Server
    ledger: Ledger
    modes: list[str]
    queries: list[str]
    sentences: list[str]
    deadline: float
    run_id: str
    killing: bool = False
    quiet_writes: bool = False
    #: Until then (the calm phase) answers, which wait on the slow upstream, are retrievals.
    answers_from: float = 0.0

    def client(self) -> Client:
        """A new HTTP client of the soaked server (the adversaries use it too)."""
        return Client(self.server)

    def new_doc(self, rng: random.Random) -> dict[str, Any]:
        n = self.ledger.next_doc
        self.ledger.next_doc += 1
        body = " ".join(rng.sample(self.sentences, k=rng.randint(3, 8)))
        return {
            "doc_id": f"soak/{self.run_id}/{n:06d}.md",
            "title": f"Soak note {n}",
            "text": f"Soak note {n} of run {self.run_id}. {body}",
        }

    async def worker(self, w: int, seed: int) -> None:
        rng = random.Random(seed * 1000 + w)
        kinds = [k for k, _ in MIX]
        weights = [wt for _, wt in MIX]
        client = Client(self.server)
        i = 0
        try:
            while time.monotonic() < self.deadline:
                i += 1
                kind = rng.choices(kinds, weights)[0]
                if self.quiet_writes and kind in ("insert", "delete"):
                    kind = "status"
                if kind == "answer" and time.monotonic() < self.answers_from:
                    kind = "retrieve"
                await self.one(client, kind, rng, i)
        finally:
            await client.close()

    async def one(self, client: Client, kind: str, rng: random.Random, i: int) -> None:
        ledger = self.ledger
        query = self.queries[i % len(self.queries)]
        method, path = "POST", "/v1/retrieve"
        payload: Any = None
        doc_id = ""
        if kind == "retrieve":
            mode = self.modes[i % len(self.modes)]
            payload = {"query": query, "mode": mode, "budget_tokens": 1000}
            kind = f"retrieve:{mode}"
        elif kind == "batch":
            payload = {"queries": rng.sample(self.queries, k=4), "budget_tokens": 500}
            path = "/v1/retrieve/batch"
        elif kind == "answer":
            path, payload = "/v1/answer", {"query": query, "budget_tokens": 800}
        elif kind == "insert":
            doc = self.new_doc(rng)
            doc_id = doc["doc_id"]
            path, payload = "/v1/documents", [doc]
        elif kind == "delete":
            choices = sorted(ledger.present - ledger.deleting)
            if not choices:
                return
            doc_id = rng.choice(choices)
            ledger.deleting.add(doc_id)
            method, path = "DELETE", f"/v1/documents/{doc_id}"
        else:
            pending = list(ledger.pending)
            if pending and rng.random() < 0.5:
                method, path = "GET", f"/v1/operations/{rng.choice(pending)}"
            else:
                target = rng.choice(sorted(ledger.present) or ["city/ferry.md"])
                method, path = "GET", f"/v1/documents/{target}"
        t0 = time.perf_counter()
        status, body, generation = await client.call(method, path, payload)
        seconds = time.perf_counter() - t0
        if status == 0:
            ledger.errors["transport (kill window)" if self.killing else "transport"] += 1
            if kind == "delete":
                ledger.deleting.discard(doc_id)
                ledger.unknown.add(doc_id)  # maybe queued before the connection broke
                ledger.present.discard(doc_id)
            elif kind == "insert":
                ledger.unknown.add(doc_id)
            await asyncio.sleep(0.05)
            return
        ledger.record(kind, status, seconds, body)
        if kind in ("insert", "delete"):
            if status == 202:
                op_id = json.loads(body)["id"]
                ledger.pending[op_id] = (kind, doc_id, generation)
                ledger.inserted += kind == "insert"
            elif kind == "delete":
                ledger.deleting.discard(doc_id)
        elif status == 200 and method == "GET" and path.startswith("/v1/operations/"):
            op = json.loads(body)
            if op["status"] in ("succeeded", "failed", "cancelled") and op["id"] in ledger.pending:
                ledger.settle(op)

    async def poller(self) -> None:
        """Confirm operations: poll the pending ones of the live generation."""
        client = Client(self.server)
        try:
            while time.monotonic() < self.deadline + 180:
                if not self.ledger.pending and time.monotonic() >= self.deadline:
                    return
                await self.poll_once(client)
                await asyncio.sleep(0.25)
        finally:
            await client.close()

    async def poll_once(self, client: Client) -> None:
        for op_id, (_, _, generation) in list(self.ledger.pending.items())[:64]:
            if generation != self.server.generation or op_id not in self.ledger.pending:
                continue
            status, body, _ = await client.call("GET", f"/v1/operations/{op_id}")
            if status == 200:
                op = json.loads(body)
                finished = op["status"] in ("succeeded", "failed", "cancelled")
                if finished and op_id in self.ledger.pending:
                    self.ledger.settle(op)
            elif status >= 500:
                self.ledger.record("status", status, 0.0, body)

    async def _served_within(self, client: Client, doc_id: str, seconds: float) -> bool:
        """Whether the server serves ``doc_id`` (200) within ``seconds``."""
        deadline = time.monotonic() + seconds
        while True:
            status, _, _ = await client.call("GET", f"/v1/documents/{doc_id}")
            if status == 200 or time.monotonic() >= deadline:
                return status == 200
            await asyncio.sleep(0.25)

    async def verify(self, label: str) -> dict[str, Any]:
        """Every committed insert present, every committed delete absent (over HTTP)."""
        client = Client(self.server)
        lost, resurrected = [], []
        try:
            for doc_id in sorted(self.ledger.present - self.ledger.unknown):
                # A document the CLI committed beside the server is served once the server's
                # refresher sees the new manifest (ServerSettings.refresh_interval_s; the
                # "CLI commits served by the server after" row): it counts as lost only when
                # it is not served within SERVE_GRACE_S.
                if not await self._served_within(client, doc_id, SERVE_GRACE_S):
                    lost.append(doc_id)
            for doc_id in sorted(self.ledger.absent - self.ledger.unknown):
                status, _, _ = await client.call("GET", f"/v1/documents/{doc_id}")
                if status != 404:
                    resurrected.append(doc_id)
        finally:
            await client.close()
        result = {
            "when": label,
            "committed_present": len(self.ledger.present - self.ledger.unknown),
            "committed_absent": len(self.ledger.absent - self.ledger.unknown),
            "lost": lost[:20],
            "lost_count": len(lost),
            "resurrected": resurrected[:20],
            "resurrected_count": len(resurrected),
        }
        log(f"verify {label}: {result}")
        return result


async def warm_up(server: Server, modes: list[str]) -> dict[str, Any]:
    """One request per mode, an answer and one insert, before the clock starts.

    The first call of each search kernel in a process may compile it (Numba), which holds
    the interpreter for seconds; the soak measures the service, not that one-time cost.
    """
    client = Client(server)
    t0 = time.perf_counter()
    statuses: Counter[int] = Counter()
    try:
        for mode in modes:
            payload = {"query": "Who founded Meridian Optics?", "mode": mode}
            statuses[(await client.call("POST", "/v1/retrieve", payload))[0]] += 1
        payload = {"query": "Who founded Meridian Optics?"}
        statuses[(await client.call("POST", "/v1/answer", payload))[0]] += 1
        doc = {"doc_id": "soak/warm-up.md", "text": "A warm-up note about the ferry."}
        status, body, _ = await client.call("POST", "/v1/documents", [doc])
        statuses[status] += 1
        if status == 202:
            op_id = json.loads(body)["id"]
            for _ in range(1200):
                status, body, _ = await client.call("GET", f"/v1/operations/{op_id}")
                if status != 200 or json.loads(body)["status"] not in ("queued", "running"):
                    break
                await asyncio.sleep(0.1)
    finally:
        await client.close()
    return {"seconds": round(time.perf_counter() - t0, 1), "statuses": dict(statuses)}


# ---------------------------------------------------------------------------- events
async def compact(soak: Soak, index: Path, until: float) -> dict[str, Any]:
    """``graphstrata compact`` beside the live server, finished (or given up) by ``until``.

    The command waits up to 30 s for the index lock; while the server's writer goes from one
    operation to the next it may still be refused ("locked by another writer": nothing is
    changed, nothing is lost). After a refusal under full traffic, writes are paused (reads go
    on) until the writer's queue is empty, and the compaction is tried again.
    """
    # --wait: the server's writer holds the lock for a whole insert, which the slow upstream
    # LLM makes long; the compaction takes the lock between two of them.
    cmd = [sys.executable, "-m", "graphstrata.bindings.cli", "compact", str(index), "--json"]
    cmd += ["--wait", "30"]
    t0 = time.perf_counter()
    refused: list[str] = []
    out: dict[str, Any] = {"rc": 1}
    attempt = 0
    while time.monotonic() < until and attempt < 12:
        attempt += 1
        if attempt == 2:
            soak.quiet_writes = True
            while soak.ledger.pending and time.monotonic() < until - 5:
                await asyncio.sleep(0.1)
        proc = await asyncio.to_thread(
            subprocess.run, cmd, capture_output=True, text=True, timeout=600
        )
        if proc.returncode == 0:
            out = {"rc": 0}
            break
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        refused.append(tail[-1][:200] if tail else f"exit {proc.returncode}")
        await asyncio.sleep(0.5)
    soak.quiet_writes = False
    out["attempts"] = attempt
    out["refused_while_the_writer_worked"] = len(refused)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["writes_paused"] = attempt >= 2
    if refused:
        out["refused_with"] = re.sub(r"/\S+", "INDEX", refused[-1])
    return out


async def sampler(soak: Soak, t0: float, every: float, samples: list[dict[str, Any]]) -> None:
    while time.monotonic() < soak.deadline:
        ledger = soak.ledger
        samples.append(
            {
                "t": round(time.monotonic() - t0),
                "generation": soak.server.generation,
                "rss_mib": rss_mib(soak.server.pid),
                "load1": load1(),
                "requests": sum(ledger.statuses.values()),
                "5xx": ledger.errors["5xx"],
                "committed_docs": len(ledger.present),
            }
        )
        await asyncio.sleep(every)


def saturating_concurrency(url: str, queries: list[str], seconds: float) -> tuple[int, list[Any]]:
    """The smallest probed concurrency within 10% of the best naive throughput."""
    from benchmarks.service.loadgen import run_load

    results = run_load(
        url,
        queries,
        modes=["naive"],
        concurrencies=list(PROBE_CONCURRENCIES),
        requests=10**7,
        duration_cap=seconds,
    )
    rows = [r.summary() for r in results]
    best = max(r["rps"] for r in rows)
    chosen = next(r["concurrency"] for r in rows if r["rps"] >= 0.9 * best)
    return int(chosen), rows


# ---------------------------------------------------------------------------- the run
async def soak_run(args: argparse.Namespace, index: Path, info: dict[str, Any]) -> dict[str, Any]:
    llm = ["--llm", args.llm_spec] if args.llm_spec else []
    server = Server(index, ["--max-pending-operations", str(args.max_pending), *llm])
    heaviest = max_bound_batch(index, questions())
    startup = await server.start()
    log(f"server up at {server.url} in {startup:.1f}s")
    probe_rows: list[Any] = []
    if args.concurrency:
        saturating = None
        workers = args.concurrency
    else:
        saturating, probe_rows = await asyncio.to_thread(
            saturating_concurrency, server.url, questions(), args.probe_seconds
        )
        workers = 2 * saturating
        log(f"saturating concurrency {saturating}; soaking with {workers} workers")
    warm = await warm_up(server, info["modes"])
    log(f"warm-up: {warm}")
    ledger = Ledger()
    t0 = time.monotonic()
    soak = Soak(
        server=server,
        ledger=ledger,
        modes=info["modes"],
        queries=questions(),
        sentences=sample_sentences(),
        deadline=t0 + args.duration,
        run_id=f"{args.seed}-{int(time.time())}",
    )
    samples: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    verifications: list[dict[str, Any]] = []
    every = min(30.0, max(5.0, args.duration / 24))

    kill_time = t0 + args.kill_at * args.duration

    async def compaction() -> None:
        await asyncio.sleep(args.compact_at * args.duration)
        t = round(time.monotonic() - t0)
        result = await compact(soak, index, until=kill_time - 2)
        events.append({"t": t, "event": "compaction (graphstrata compact, server live)", **result})
        log(f"compaction: {result}")

    async def kill_and_restart() -> None:
        await asyncio.sleep(max(0.0, kill_time - time.monotonic()))
        t = round(time.monotonic() - t0)
        soak.killing = True
        rss_before = rss_mib(server.pid)
        in_flight = len(ledger.pending)
        await server.kill9()
        unknown = ledger.lose_generation(server.generation)
        restart = await server.start()
        ledger.last_answer = 0.0  # the downtime is reported apart, not as a stall
        soak.killing = False
        events.append(
            {
                "t": t,
                "event": "kill -9 of the server under traffic, then restart",
                "rss_before_mib": None if rss_before is None else round(rss_before),
                "restart_seconds": round(restart, 1),
                "operations_unconfirmed_at_the_kill": unknown,
                "pending_before": in_flight,
            }
        )
        log(f"killed and restarted in {restart:.1f}s ({unknown} operations unconfirmed)")
        verifications.append(await soak.verify("after the restart"))

    adversaries = Adversaries(
        soak, index, hostile_from=t0 + args.hostile_at * args.duration, duration=args.duration
    )
    soak.answers_from = adversaries.hostile_from
    tasks = [asyncio.create_task(soak.worker(w, args.seed)) for w in range(workers)]
    tasks.append(asyncio.create_task(adversaries.plain_prober()))
    tasks.append(asyncio.create_task(adversaries.max_bound_client(heaviest)))
    tasks.append(asyncio.create_task(adversaries.cli_writer(args.cli_every)))
    tasks.append(asyncio.create_task(soak.poller()))
    tasks.append(asyncio.create_task(sampler(soak, t0, every, samples)))
    tasks.append(asyncio.create_task(compaction()))
    tasks.append(asyncio.create_task(kill_and_restart()))
    await asyncio.gather(*tasks)
    wall = time.monotonic() - t0
    # Operations the poller could not see finish (its grace period ended): their fate is
    # unknown, as at the kill (a delete still queued may yet run when the server stops).
    still_pending = ledger.lose_generation(server.generation)
    verifications.append(await soak.verify("at the end"))
    longest_gap = ledger.longest_gap
    final_rss = rss_mib(server.pid)
    await server.stop()
    offline = offline_check(index, ledger)
    verifications.append(offline)
    return {
        "duration_s": args.duration,
        "wall_s": round(wall, 1),
        "warm_up": warm,
        "longest_gap_s": round(longest_gap, 2),
        "workers": workers,
        "saturating_concurrency": saturating,
        "probe": [
            {k: r[k] for k in ("concurrency", "ok", "rps", "p50_ms", "p95_ms")} for r in probe_rows
        ],
        "statuses": {f"{k} {s}": n for (k, s), n in sorted(ledger.statuses.items())},
        "errors": dict(ledger.errors),
        "server_errors": ledger.server_errors,
        "latency_ms": {
            k: {
                "p50": round(percentile(v, 50), 1),
                "p95": round(percentile(v, 95), 1),
                "p99": round(percentile(v, 99), 1),
            }
            for k, v in sorted(ledger.latencies.items())
        },
        "operations": dict(ledger.op_outcomes),
        "failed_operations": ledger.failed_ops,
        "acknowledged_inserts": ledger.inserted,
        "unknown_fate": len(ledger.unknown),
        "pending_at_the_end": still_pending,
        "events": events,
        "verifications": verifications,
        "samples": samples,
        "final_rss_mib": final_rss,
        "max_rss_mib": max((x["rss_mib"] or 0 for x in samples), default=None),
        "hostile": adversaries.summary(),
        "llm_delay_s": args.llm_delay,
        "hostile_at_s": args.hostile_at * args.duration,
        "server_reports": [o.strip().splitlines()[-1] if o.strip() else "" for o in server.outputs],
    }


def offline_check(index: Path, ledger: Ledger) -> dict[str, Any]:
    """Open the index itself (server stopped): the committed writes are in its docs table."""
    from graphstrata.bindings.api import Index

    opened = Index.open(index)
    docs = set(opened.engine.state.snapshot.docs.column("doc_id").to_pylist())
    present = ledger.present - ledger.unknown
    absent = ledger.absent - ledger.unknown
    lost = sorted(present - docs)
    resurrected = sorted(absent & docs)
    return {
        "when": "index opened after the run",
        "committed_present": len(present),
        "committed_absent": len(absent),
        "lost": lost[:20],
        "lost_count": len(lost),
        "resurrected": resurrected[:20],
        "resurrected_count": len(resurrected),
        "version": opened.engine.version,
        "documents": len(docs),
    }


# ---------------------------------------------------------------------------- report
def markdown(result: dict[str, Any], info: dict[str, Any], command: str) -> str:
    lines = [
        "# Soak: mixed traffic, hostile clients, compaction, kill -9 and restart",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {machine()}; shared with other jobs (load average beside each "
        "sample). Index: `examples/sample` "
        f"({info['documents']} documents, embedder `{info['embedder']}`, extractive LLM, "
        f"modes {', '.join(info['modes'])}), built in {info['seconds']} s.",
        "",
    ]
    if result["probe"]:
        lines += [
            "Saturation probe (`naive` retrievals): "
            + "; ".join(
                f"c={r['concurrency']}: {r['rps']:.1f} req/s (p95 {r['p95_ms']:.0f} ms)"
                for r in result["probe"]
            )
            + f" -> saturating concurrency {result['saturating_concurrency']}, "
            f"soaked with {result['workers']} workers (2x).",
            "",
        ]
    else:
        lines += [f"Workers: {result['workers']} (given with `--concurrency`).", ""]
    ver = {v["when"]: v for v in result["verifications"]}
    responses = sum(int(n) for n in result["statuses"].values())
    by_class: Counter[str] = Counter()
    for key, n in result["statuses"].items():
        status = key.rsplit(" ", 1)[1]
        by_class[status if status in ("429", "404") else f"{status[0]}xx"] += n
    lines += [
        "## Result",
        "",
        "| what | value |",
        "|---|---|",
        f"| traffic | {result['duration_s']:g} s, then "
        f"{result['wall_s'] - result['duration_s']:.0f} s until every acknowledged write "
        "was settled |",
        f"| warm-up before the clock (first calls compile kernels) | "
        f"{result['warm_up']['seconds']} s, statuses {result['warm_up']['statuses']} |",
        f"| longest time without any answer while the server was up | "
        f"{result['longest_gap_s']} s |",
        f"| responses | {responses} ({', '.join(f'{k}: {v}' for k, v in sorted(by_class.items()))}) |",
        f"| **5xx responses** | **{result['errors'].get('5xx', 0)}** |",
        f"| transport errors while the server was down / otherwise | "
        f"{result['errors'].get('transport (kill window)', 0)} / "
        f"{result['errors'].get('transport', 0)} |",
        f"| inserts acknowledged (202) | {result['acknowledged_inserts']} |",
        f"| operations | {', '.join(f'{k}: {v}' for k, v in sorted(result['operations'].items()))} |",
        f"| acknowledged, not confirmed before the kill or the end (either outcome allowed) | "
        f"{result['unknown_fate']} (still pending at the end: {result['pending_at_the_end']}) |",
    ]
    for label, v in ver.items():
        lines.append(
            f"| **lost committed writes** {label} | **{v['lost_count']}** of "
            f"{v['committed_present']} inserts; {v['resurrected_count']} of "
            f"{v['committed_absent']} deletes undone |"
        )
    for e in result["events"]:
        detail = ", ".join(f"{k} {v}" for k, v in e.items() if k not in ("t", "event"))
        lines.append(f"| t = {e['t']} s: {e['event']} | {detail} |")
    lines.append(f"| server RSS at the end | {fmt_mib(result['final_rss_mib'])} |")
    lines.append(f"| server RSS, largest sample | {fmt_mib(result['max_rss_mib'])} |")
    lines += hostile_rows(result)
    lines += ["", "Latency of successful requests (ms, client side, under the soak):", ""]
    lines += ["| request | p50 | p95 | p99 |", "|---|---|---|---|"]
    for kind, lat in result["latency_ms"].items():
        lines.append(f"| {kind} | {lat['p50']} | {lat['p95']} | {lat['p99']} |")
    lines += [
        "",
        "## Server memory over time",
        "",
        "| t (s) | server | RSS (MiB) | responses so far | 5xx so far | committed soak docs "
        "| load average (1 min) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in result["samples"]:
        lines.append(
            f"| {s['t']} | #{s['generation']} | {fmt_mib(s['rss_mib'])} | {s['requests']} "
            f"| {s['5xx']} | {s['committed_docs']} | {s['load1']} |"
        )
    if result["server_errors"]:
        lines += ["", "5xx samples:", ""] + [f"- `{e}`" for e in result["server_errors"]]
    if result["failed_operations"]:
        lines += ["", "Failed operations:", ""] + [f"- `{e}`" for e in result["failed_operations"]]
    return "\n".join(lines) + "\n"


def hostile_rows(result: dict[str, Any]) -> list[str]:
    """The report's section on the hostile clients (issue 51's targets)."""
    h = result["hostile"]
    calm, hostile = h["plain"]["calm"], h["plain"]["hostile"]
    mb, cli = h["max_bound"], h["cli_writer"]
    served = [s for s in cli["served_after_s"] if s is not None]
    never = sum(1 for s in cli["served_after_s"] if s is None)
    refusal = re.sub(r"/\S+", "INDEX", cli.get("last_refusal", "-"))
    return [
        "",
        "## Hostile clients (issue 51)",
        "",
        "| what | value |",
        "|---|---|",
        f"| **plain `naive` retrieve p99, calm / hostile phase** | **{calm['p99']} ms / "
        f"{hostile['p99']} ms (x{h['p99_ratio']}; target <= 3)** |",
        f"| plain retrieves (p50) calm / hostile | {calm['requests']} ({calm['p50']} ms) / "
        f"{hostile['requests']} ({hostile['p50']} ms); failures {calm['failures']} / "
        f"{hostile['failures']} |",
        f"| slowest plain retrieves (ms at t s; hostile from t = "
        f"{result['hostile_at_s']:g} s) | "
        f"{', '.join(f'{ms} at {t:g}' for ms, t in h['slowest_plain'])} |",
        f"| maximal-bound graph batches (256 queries, top_k 1000, budget 1,000,000, "
        f"{mb.get('params')}) | sent {mb.get('sent')}, statuses {mb.get('statuses')} "
        f"(0 = no answer within {REQUEST_TIMEOUT_S:g} s), longest {mb.get('longest_s')} s |",
        f"| slow upstream LLM behind `/v1/answer` | {result['llm_delay_s']:g} s per answer |",
        f"| `graphstrata insert` beside the server | {cli['commits']} commits ({cli['docs']} "
        f"documents), {cli['refused']} refused (lock held: "
        f"`{refusal}`) |",
        f"| CLI commits served by the server after (s) | "
        f"{', '.join(f'{s:g}' for s in served) or '-'}; never within 60 s: {never} |",
    ]


def fmt_mib(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds (default 600)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="workers (default: 2x the measured saturation)",
    )
    parser.add_argument("--probe-seconds", type=float, default=8.0)
    parser.add_argument("--embedder", default="hashing", help="embedder spec (default hashing)")
    parser.add_argument("--kill-at", type=float, default=0.5, help="share of the duration")
    parser.add_argument("--compact-at", type=float, default=0.3, help="share of the duration")
    parser.add_argument(
        "--hostile-at", type=float, default=0.2, help="share of the duration (default 0.2)"
    )
    parser.add_argument(
        "--llm-delay",
        type=float,
        default=4.0,
        help="seconds the loopback upstream LLM takes per answer (0: the extractive LLM)",
    )
    parser.add_argument(
        "--cli-every", type=float, default=15.0, help="seconds between CLI inserts (default 15)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--max-pending",
        type=int,
        default=16,
        help="the server's --max-pending-operations (default 16: its queue drains in seconds)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "soak.md")
    parser.add_argument("--keep", action="store_true", help="keep the index directory")
    args = parser.parse_args(argv)
    if not 0 < args.compact_at < args.kill_at < 1:
        parser.error("need 0 < --compact-at < --kill-at < 1")
    if args.duration <= 0 or (args.concurrency is not None and args.concurrency < 1):
        parser.error("--duration must be > 0 and --concurrency >= 1")
    workdir = Path(tempfile.mkdtemp(prefix="graphstrata-soak-"))
    index = workdir / "ix"
    try:
        log(f"building the index from {SAMPLE_DIR} ({args.embedder})")
        info = {**build_index(index, args.embedder), "embedder": args.embedder}
        log(f"built: {info}")
        with contextlib.ExitStack() as upstream:
            args.llm_spec = (
                upstream.enter_context(slow_upstream(args.llm_delay)) if args.llm_delay else ""
            )
            result = asyncio.run(soak_run(args, index, info))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    command = command_line(__spec__.name, argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(result, info, command.strip()))
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}, indent=1))
    log(f"wrote {args.out}")
    lost = sum(v["lost_count"] + v["resurrected_count"] for v in result["verifications"])
    return 1 if result["errors"].get("5xx", 0) or lost else 0


if __name__ == "__main__":
    sys.exit(main())

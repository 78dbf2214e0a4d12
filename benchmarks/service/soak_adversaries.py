"""The hostile side of the soak (issue 51): what the soak adds to its mixed traffic.

* :func:`max_bound_batch`: a ``/v1/retrieve/batch`` in ``graph`` mode at the published bounds:
  ``max_batch_queries`` queries, ``top_k`` and ``budget_tokens`` at the server's maxima, every
  integer mode parameter with a published maximum at that maximum (``ppr_iters`` included).
  A client sends them one after another (:meth:`Adversaries.max_bound_client`).
* :class:`SlowUpstream`: a loopback OpenAI-compatible upstream (``tests/helpers``) that takes
  ``delay`` seconds per answer; the server's LLM is pointed at it, so every ``/v1/answer`` of
  the mix waits on it.
* :meth:`Adversaries.cli_writer`: ``graphstrata insert`` run beside the server every few
  seconds (the writer lock decides who goes first); every document it committed must be
  served by the server (it notices other writers' versions) and be there at the end.
* :meth:`Adversaries.plain_prober`: plain ``naive`` retrievals at a fixed rate (10/s, open
  loop), before the hostile clients and the answers start (the calm phase: the rest of the
  mix runs) and after; its p99 in both phases is the figure
  the issue asks for.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The server's own maxima of a batch (``ServerSettings`` defaults).
SERVER_MAXIMA = {"max_batch_queries": 256, "max_top_k": 1000, "max_budget_tokens": 1_000_000}


def max_bound_batch(index: Path, queries: list[str]) -> dict[str, Any]:
    """The heaviest ``graph`` batch the server accepts, from the bounds it publishes.

    Parameters
    ----------
    index:
        The served index (its graph mode's parameter schema is read).
    queries:
        Questions, repeated to fill the batch.

    Returns
    -------
    dict
        The request body.
    """
    from graphstrata.bindings.api import Index

    opened = Index.open(index)
    try:
        schema = opened.mode_params["graph"].json_schema()
    finally:
        opened.close()
    params = {}
    for name, prop in schema.get("properties", {}).items():
        alternatives = [prop, *prop.get("anyOf", ())]
        for alt in alternatives:
            if alt.get("type") == "integer" and "maximum" in alt:
                params[name] = int(alt["maximum"])
                break
    n = SERVER_MAXIMA["max_batch_queries"]
    return {
        "queries": [queries[i % len(queries)] for i in range(n)],
        "mode": "graph",
        "top_k": SERVER_MAXIMA["max_top_k"],
        "budget_tokens": SERVER_MAXIMA["max_budget_tokens"],
        "params": params,
    }


@contextlib.contextmanager
def slow_upstream(delay: float) -> Iterator[str]:
    """A loopback OpenAI-compatible upstream answering after ``delay`` seconds, in a process
    of its own (its answers are Python work that must not stall the load generator); yields
    the server's ``--llm`` spec (per-request timeout ``2 * delay``, no retries)."""
    repo = Path(__file__).resolve().parents[2]
    code = (
        "import time\n"
        "from tests.helpers.fake_openai_server import FakeOpenAIServer\n"
        f"srv = FakeOpenAIServer(delay={delay!r}, max_requests=10**7).start()\n"
        "print(srv.url, flush=True)\n"
        "time.sleep(10**7)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo)},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # a client that went away is not news
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url:
            raise RuntimeError("the fake upstream did not start")
        yield f"openai:slow-model@{url}?timeout={2 * delay:g}&max_retries=0"
    finally:
        proc.kill()
        proc.wait()


@dataclass
class Adversaries:
    """The hostile clients of one soak run and what they saw."""

    soak: Any  # benchmarks.service.soak.Soak
    index: Path
    hostile_from: float  # monotonic time the hostile clients start
    duration: float  # seconds of traffic
    slowest: list[tuple[int, float]] = field(default_factory=list)  # (ms, t) of plain probes
    plain: dict[str, list[float]] = field(default_factory=lambda: {"calm": [], "hostile": []})
    plain_failures: dict[str, int] = field(default_factory=lambda: {"calm": 0, "hostile": 0})
    max_bound: dict[str, Any] = field(default_factory=dict)
    cli: dict[str, Any] = field(
        default_factory=lambda: {"commits": 0, "refused": 0, "docs": 0, "served_after_s": []}
    )

    async def plain_prober(self, rate: float = 10.0) -> None:
        """Plain ``naive`` retrievals at a fixed rate (open loop: a stalled server does not
        slow the prober down, so a stall counts once per request it delays, not once in
        all), sorted into the calm and the hostile phase by their scheduled start. Each
        latency runs from the scheduled start; requests in the kill window are not counted."""
        t0 = time.monotonic()
        tasks: set[asyncio.Task[None]] = set()
        i = 0
        while time.monotonic() < self.soak.deadline:
            i += 1
            due = t0 + i / rate
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            if len(tasks) < 64:  # a bound on the probes in flight
                task = asyncio.create_task(self._probe(i, due))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        await asyncio.gather(*tasks)

    async def _probe(self, i: int, due: float) -> None:
        phase = "hostile" if due >= self.hostile_from else "calm"
        query = self.soak.queries[i % len(self.soak.queries)]
        payload = {"query": query, "mode": "naive", "budget_tokens": 1000}
        client = self.soak.client()
        try:
            status, body, _ = await client.call("POST", "/v1/retrieve", payload)
        finally:
            await client.close()
        seconds = time.monotonic() - due
        if self.soak.killing or status == 0:
            return
        self.soak.ledger.record("retrieve:plain-probe", status, seconds, body)
        if status == 200:
            self.plain[phase].append(seconds * 1000)
            at = round(due - self.soak.deadline + self.duration, 1)
            self.slowest = sorted([*self.slowest, (round(seconds * 1000), at)], reverse=True)[:5]
        else:
            self.plain_failures[phase] += 1

    async def max_bound_client(self, payload: dict[str, Any]) -> None:
        """Maximal-bound graph batches, one after another, from the hostile phase on."""
        await asyncio.sleep(max(0.0, self.hostile_from - time.monotonic()))
        client = self.soak.client()
        seen: dict[str, Any] = {"sent": 0, "statuses": {}, "seconds": []}
        self.max_bound = seen
        seen["params"] = payload["params"]
        try:
            while time.monotonic() < self.soak.deadline:
                t0 = time.perf_counter()
                status, body, _ = await client.call("POST", "/v1/retrieve/batch", payload)
                seen["sent"] += 1
                seen["statuses"][str(status)] = seen["statuses"].get(str(status), 0) + 1
                seen["seconds"].append(round(time.perf_counter() - t0, 1))
                if status:
                    self.soak.ledger.record("batch:max-bound", status, 0.0, body)
                else:  # timed out client-side (or the kill): the server may still work on it
                    await asyncio.sleep(1.0)
        finally:
            await client.close()

    async def cli_writer(self, every: float) -> None:
        """``graphstrata insert`` beside the server every ``every`` seconds, from the hostile
        phase on; each committed document must become visible through the server."""
        await asyncio.sleep(max(0.0, self.hostile_from - time.monotonic()))
        n = 0
        folder = Path(tempfile.mkdtemp(prefix="soak-cli-"))
        while time.monotonic() < self.soak.deadline - every:
            n += 1
            docs = [
                {
                    "doc_id": f"soak/cli/{self.soak.run_id}/{n:04d}-{k}.md",
                    "text": f"CLI note {n}.{k} written beside the server. "
                    + " ".join(
                        self.soak.sentences[(n * 3 + k) % len(self.soak.sentences)]
                        for _ in range(2)
                    ),
                }
                for k in range(2)
            ]
            src = folder / f"batch-{n}.jsonl"
            src.write_text("".join(json.dumps(d) + "\n" for d in docs))
            cmd = [
                sys.executable,
                "-m",
                "graphstrata.bindings.cli",
                "insert",
                str(self.index),
                str(src),
            ]
            proc = await asyncio.to_thread(
                subprocess.run, cmd, capture_output=True, text=True, timeout=600
            )
            if proc.returncode == 0:
                self.cli["commits"] += 1
                self.cli["docs"] += len(docs)
                for d in docs:
                    self.soak.ledger.present.add(d["doc_id"])
                asyncio.get_running_loop().create_task(self._served_after(docs[-1]["doc_id"]))
            else:  # the server's writer held the lock: try again soon
                self.cli["refused"] += 1
                tail = (proc.stderr or proc.stdout).strip().splitlines()
                self.cli["last_refusal"] = tail[-1][:200] if tail else f"exit {proc.returncode}"
                await asyncio.sleep(1.0)
                continue
            await asyncio.sleep(every)

    async def _served_after(self, doc_id: str) -> None:
        """Seconds until the server serves ``doc_id`` (committed by the CLI just now)."""
        client = self.soak.client()
        t0 = time.monotonic()
        try:
            while time.monotonic() - t0 < 60:
                status, _, _ = await client.call("GET", f"/v1/documents/{doc_id}")
                if status == 200:
                    self.cli["served_after_s"].append(round(time.monotonic() - t0, 2))
                    return
                await asyncio.sleep(0.1)
            self.cli["served_after_s"].append(None)
        finally:
            await client.close()

    def summary(self) -> dict[str, Any]:
        """The figures of the report."""
        from benchmarks.common import percentile

        plain = {
            phase: {
                "requests": len(v),
                "failures": self.plain_failures[phase],
                "p50": round(percentile(v, 50), 1),
                "p99": round(percentile(v, 99), 1),
            }
            for phase, v in self.plain.items()
        }
        calm, hostile = plain["calm"]["p99"], plain["hostile"]["p99"]
        ratio = round(hostile / calm, 2) if calm and calm == calm and hostile == hostile else None
        mb = dict(self.max_bound)
        seconds = mb.pop("seconds", [])
        mb["longest_s"] = max(seconds) if seconds else None
        return {
            "plain": plain,
            "p99_ratio": ratio,
            "slowest_plain": self.slowest,
            "max_bound": mb,
            "cli_writer": self.cli,
        }

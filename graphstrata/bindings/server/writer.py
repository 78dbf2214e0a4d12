"""The background writer: document inserts and deletes, applied one at a time, in order.

Requests that change documents are answered ``202`` with an operation id as soon as the
operation is queued; readers never wait for a write, because the engine commits a new
immutable version and swaps it in (docs/architecture.md, "Service").
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphstrata.bindings.api import Document, OperationReport
from graphstrata.bindings.files import FileBatch
from graphstrata.bindings.server.errors import ApiError, api_error
from graphstrata.bindings.server.metrics import ServiceMetrics

if TYPE_CHECKING:
    from graphstrata.bindings.api import Index

_SHUTDOWN = {"code": "cancelled", "message": "shutdown"}


@dataclass
class Operation:
    """One queued document insert or delete."""

    id: str
    kind: str
    doc_ids: list[str]
    docs: list[Document] | None = None
    status: str = "queued"  # queued | running | succeeded | failed | cancelled
    submitted_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    report: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    #: An upload's parsed files (``bindings/files``); their outcomes once it is over.
    batch: FileBatch | None = None
    files: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        """Whether the operation is over (succeeded, failed or cancelled)."""
        return self.status in ("succeeded", "failed", "cancelled")

    def document_states(self) -> dict[str, str]:
        """Each document's state: ``queued`` until the operation is over, then ``indexed``
        (``deleted`` for a delete), ``failed`` or ``cancelled``; a file that gave no
        document is ``failed`` from the start."""
        done = {"succeeded": "deleted" if self.kind == "delete" else "indexed"}
        state = done.get(self.status, self.status if self.finished else "queued")
        states = dict.fromkeys(self.doc_ids, state)
        for outcome in self.files:
            if outcome.get("status") == "failed" and outcome.get("doc_id"):
                states[outcome["doc_id"]] = "failed"
        return states

    def to_dict(self) -> dict[str, Any]:
        """The operation as ``GET /v1/operations/{id}`` shows it (at most 100 doc ids and
        document states; ``document_count`` has them all)."""
        states = self.document_states()
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "documents": dict(list(states.items())[:100]),
            "document_count": len(states),
            "doc_ids": self.doc_ids[:100],
            "submitted_at": self.submitted_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "report": self.report,
            "error": self.error,
            "files": self.files,
        }


def _unwritten(batch: FileBatch, error: dict[str, str] | None) -> list[dict[str, Any]]:
    """The outcomes of an upload that was not written: each parsed file failed with the
    operation's error."""
    cause = (error or {}).get("message", "not written")
    for outcome in batch.outcomes:
        if outcome["status"] == "parsed":
            outcome.update(status="failed", error=cause)
    return batch.outcomes


class Writer:
    """The one background thread that applies document operations, in submission order.

    Readers are never blocked: the engine commits a new immutable version and swaps it in.

    Parameters
    ----------
    index:
        The served index.
    max_pending:
        Operations queued or running at once; one more is refused with 429.
    keep:
        Finished operations remembered.
    metrics:
        Where the pending gauge and the rejections go.
    retry_after_s:
        ``Retry-After`` of a 429.
    lock_wait_s:
        How long an operation waits to commit while another process holds the index lock
        (``graphstrata compact`` beside the service) before it fails.
    """

    def __init__(
        self,
        index: Index,
        max_pending: int,
        keep: int,
        metrics: ServiceMetrics,
        retry_after_s: int = 1,
        lock_wait_s: float = 120.0,
    ):
        self.index = index
        self.lock_wait_s = lock_wait_s
        self.max_pending = max_pending
        self.retry_after_s = retry_after_s
        self.keep = keep
        self.metrics = metrics
        self._queue: queue.Queue[Operation | None] = queue.Queue()
        self._ops: OrderedDict[str, Operation] = OrderedDict()
        self._pending_docs: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.done = {"succeeded": 0, "failed": 0, "cancelled": 0}

    def start(self) -> None:
        """Start the writer thread."""
        self._thread = threading.Thread(target=self._loop, name="gs-writer", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the running operation, cancel the queued ones."""
        self._stopping = True
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def pending(self) -> int:
        """Operations queued or running."""
        with self._lock:
            return sum(1 for op in self._ops.values() if not op.finished)

    def submit(
        self,
        kind: str,
        doc_ids: list[str],
        docs: list[Document] | None,
        batch: FileBatch | None = None,
    ) -> Operation:
        """Queue an operation.

        Parameters
        ----------
        kind:
            ``"insert"`` (with ``docs``) or ``"delete"``.
        doc_ids:
            The documents it touches.
        docs:
            The validated documents of an insert.
        batch:
            An upload's parsed files (its documents are ``docs``): the operation's ``files``
            gives each file's outcome.

        Returns
        -------
        Operation
            The queued operation.

        Raises
        ------
        ApiError
            429 when ``max_pending`` operations are pending, 503 while shutting down.
        """
        op = Operation(id=uuid.uuid4().hex, kind=kind, doc_ids=doc_ids, docs=docs, batch=batch)
        if batch is not None:
            op.files = batch.outcomes
        with self._lock:
            if self._stopping:
                raise ApiError(503, "overloaded", "the service is shutting down")
            if sum(1 for o in self._ops.values() if not o.finished) >= self.max_pending:
                self.metrics.rejected.labels("operation").inc()
                raise ApiError(
                    429,
                    "overloaded",
                    f"{self.max_pending} document operations are pending; retry later",
                    headers={"Retry-After": str(self.retry_after_s)},
                )
            self._ops[op.id] = op
            for d in doc_ids:
                self._pending_docs.setdefault(d, []).append(op.id)
            self._prune()
        self.metrics.pending_operations.set(self.pending)
        self._queue.put(op)
        return op

    def get(self, op_id: str) -> Operation | None:
        """The operation with this id, if it is remembered."""
        with self._lock:
            return self._ops.get(op_id)

    def recent(self, limit: int) -> list[Operation]:
        """The ``limit`` newest operations remembered, newest first."""
        with self._lock:
            return list(reversed(self._ops.values()))[:limit]

    def cancel(self, op_id: str) -> tuple[Operation | None, bool]:
        """Cancel a queued operation (the writer skips it).

        Returns
        -------
        tuple
            ``(operation, cancelled)``: the operation (None for an unknown id), and whether
            this call cancelled it (False once it runs or is over).
        """
        with self._lock:
            op = self._ops.get(op_id)
            if op is None or op.status != "queued":
                return op, False
            # Claimed under the lock the writer claims under: it will skip the operation.
            op.status = "cancelling"
        self._finish(op, "cancelled", error={"code": "cancelled", "message": "cancelled"})
        return op, True

    def pending_for(self, doc_id: str) -> list[Operation]:
        """The unfinished operations that touch ``doc_id``."""
        with self._lock:
            return [self._ops[i] for i in self._pending_docs.get(doc_id, ())]

    def stats(self) -> dict[str, Any]:
        """Pending operations and finished ones by outcome."""
        return {"pending": self.pending, **self.done}

    # ------------------------------------------------------------------ the thread
    def _prune(self) -> None:
        while len(self._ops) > self.keep:
            oldest_id = next((i for i, o in self._ops.items() if o.finished), None)
            if oldest_id is None:
                return
            del self._ops[oldest_id]

    def _loop(self) -> None:
        while True:
            op = self._queue.get()
            if op is None:
                if self._stopping:
                    self._cancel_queued()
                    return
                continue
            with self._lock:  # claimed under the lock ``cancel`` checks the status under
                if op.status != "queued":  # cancelled while queued
                    continue
                op.status = "cancelling" if self._stopping else "running"
            if op.status == "cancelling":
                self._finish(op, "cancelled", error=dict(_SHUTDOWN))
                continue
            self._apply(op)

    def _cancel_queued(self) -> None:
        while True:
            try:
                op = self._queue.get_nowait()
            except queue.Empty:
                return
            if op is None:
                continue
            with self._lock:
                if op.status != "queued":
                    continue
                op.status = "cancelling"
            self._finish(op, "cancelled", error=dict(_SHUTDOWN))

    def _apply(self, op: Operation) -> None:
        op.started_at = time.time()
        try:
            report = self._run_waiting_for_lock(op)
        except Exception as exc:
            err = api_error(exc, f"operation {op.id} ({op.kind})")
            error = {"code": err.code, "message": err.message}
            error.update({k: v for k, v in err.details.items() if isinstance(v, str)})
            self._finish(op, "failed", error=error)
        else:
            self._finish(op, "succeeded", report=report.to_dict())
        finally:
            self.metrics.observe_index(self.index)

    def _run_waiting_for_lock(self, op: Operation) -> OperationReport:
        """Apply ``op``; the index lock is taken only to commit.

        The engine prepares the write (chunks, embeddings, every LLM stage) without the lock
        and takes it to commit, so another writer (``graphstrata compact`` or ``insert`` run
        beside the service) is not starved by a slow LLM; while that writer holds the lock
        for its own transaction, the commit waits up to ``lock_wait_s`` instead of failing,
        and a version it committed meanwhile is written on (decision 0032).
        """
        if op.batch is not None:
            return self.index.insert_parsed(op.batch, wait=self.lock_wait_s)
        if op.kind == "insert":
            return self.index.insert(op.docs or [], wait=self.lock_wait_s)
        return self.index.delete(op.doc_ids, missing_ok=True, wait=self.lock_wait_s)

    def _finish(
        self,
        op: Operation,
        status: str,
        report: dict[str, Any] | None = None,
        error: dict[str, str] | None = None,
    ) -> None:
        with self._lock:
            op.report = report
            op.error = error
            op.docs = None  # release the texts
            if op.batch is not None:
                op.files = report["files"] if report else _unwritten(op.batch, error)
                op.batch = None
            op.finished_at = time.time()
            op.status = status
            self.done[status] += 1
            for d in op.doc_ids:
                ids = self._pending_docs.get(d)
                if ids and op.id in ids:
                    ids.remove(op.id)
                    if not ids:
                        del self._pending_docs[d]
        self.metrics.pending_operations.set(self.pending)

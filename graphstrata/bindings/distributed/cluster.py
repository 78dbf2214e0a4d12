"""The Ray connection and the resources of one build (``RayOptions``).

Ray is an optional extra (``pip install 'graphstrata[ray]'``): this module imports it only in
:func:`require_ray`, so the package imports, and ``graphstrata --help`` runs, without it.

Resource decisions (the test machine has 2 cores; figures in ``benchmarks/results/distributed.md``):

* The driver runs one stage at a time: while the embedding actors work the LLM workers idle
  and the other way round. So the two pools share the cores: an actor reserves
  ``cpus_per_actor`` (default 0.5) logical CPUs, an extractive LLM task as much, and two actors
  of each pool plus two tasks fit on 2 cores without a pool waiting for the other's
  reservation (with a full CPU per actor the LLM tasks would wait forever behind the idle
  embedding actors).
* On a cluster with GPUs one model is one actor on one GPU: a vLLM actor takes
  ``llm_gpus_per_actor`` (default 1.0, or the spec's ``tp`` GPUs); an embedding actor takes a
  whole GPU when the cluster has one for each embedding actor beside the LLM actors' GPUs
  (an ``extractive`` or ``openai`` LLM takes none), so that its batches do not share the
  device. Otherwise (vLLM on every GPU) it takes ``SHARED_EMBED_GPUS`` (0.1: a MiniLM-sized
  model needs well under a tenth of a GPU's memory) and sits beside a vLLM engine on the same
  GPU, which the engine's ``gpu_memory_utilization`` leaves room for (0.85 does): whole GPUs
  there would ask for more GPUs than the cluster has, and the pools start together.
  ``embed_gpus_per_actor`` sets the share explicitly (:meth:`Cluster.embed_gpus`).
* Each CPU actor runs its model with ``threads_per_actor`` threads (default 1: the
  ``worker`` thread budget of ``bindings/threads.py`` over that many cores, applied before
  the model loads, plus ``OMP_NUM_THREADS``) so that torch or ONNX Runtime in two actors does
  not oversubscribe the cores. This
  is set inside the actor, not through a ``runtime_env``: an actor with its own runtime
  environment cannot take one of the workers Ray keeps started, and on 2 cores starting a
  fresh worker cost seconds per actor.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from graphstrata.bindings.extras import MissingExtraError, hint, require

#: GPUs of an embedding actor that shares its GPU with an LLM actor (module docstring).
SHARED_EMBED_GPUS = 0.1

#: The one line a missing extra prints (``ray[data]``, pinned by the extra).
INSTALL_HINT = hint("--ray", "ray")


class RayUnavailableError(MissingExtraError):
    """Ray is not installed (the ``ray`` extra)."""


def require_ray() -> ModuleType:
    """Import Ray, or fail with one line naming the extra to install.

    Returns
    -------
    module
        The ``ray`` module (``ray.data`` imported too).

    Raises
    ------
    RayUnavailableError
        When ``ray[data]`` is not importable.
    """
    require("ray.data", "ray", "--ray", error=RayUnavailableError)
    return require("ray", "ray", "--ray", error=RayUnavailableError)


@dataclass(frozen=True)
class RayOptions:
    """How a distributed build uses the cluster.

    Attributes
    ----------
    address:
        Ray address (``"auto"``, ``"ray://HEAD:10001"``, ``"HEAD:6379"``); ``None`` connects
        to the one ``RAY_ADDRESS`` or a local ``ray start`` names, else starts a local one.
        A process that has already joined a cluster (``ray.init`` before the build) stays
        on it and the address is not used.
    actors:
        Actors per model pool (embedder, stateful LLM); ``None``: the cluster's GPUs when it
        has some, else its CPUs.
    cpus_per_actor:
        Logical CPUs an actor or an extractive task reserves (module docstring).
    embed_gpus_per_actor:
        GPUs an embedding actor reserves when the cluster has GPUs; ``None`` (default): a
        whole GPU when there is one per actor beside the LLM actors', else
        ``SHARED_EMBED_GPUS`` (:meth:`Cluster.embed_gpus`, module docstring).
    llm_gpus_per_actor:
        GPUs an LLM actor reserves when the cluster has GPUs (module docstring).
    threads_per_actor:
        Cores of each CPU actor's thread budget (role ``worker``: BLAS, Numba, ONNX Runtime,
        torch; GPU actors keep the libraries' defaults).
    embed_batch_rows:
        Texts per actor call. The engine hands 256 texts per ``embed`` call
        (``engine.component.EMBED_BATCH``); 64 splits that over 4 actors. Not tuned further:
        on 2 cores the call cost (60 ms per engine call measured) is not in the piece size.
    llm_batch_rows:
        Prompts per actor call or task. Every piece is cached as it returns, so smaller
        pieces lose less to a killed driver; vLLM wants large ones for continuous batching
        (use 256 or more on GPUs).
    task_batch_rows:
        Prompts per Ray Data task of the stateless extractive LLM. No cache waits for its
        answers, and each task costs Ray Data tens of milliseconds: with 32-prompt tasks the
        2,942 decompositions of the benchmark's corpus took 3.1x the in-process time, most of
        it per-task cost (``benchmarks/results/distributed.md``).
    max_restarts:
        Restarts of a dead actor (its model is loaded again).
    max_task_retries:
        Retries of a call whose actor died (Ray resends it to the restarted actor), and of a
        task whose worker died.
    """

    address: str | None = None
    actors: int | None = None
    cpus_per_actor: float = 0.5
    embed_gpus_per_actor: float | None = None
    llm_gpus_per_actor: float = 1.0
    threads_per_actor: int = 1
    embed_batch_rows: int = 64
    llm_batch_rows: int = 32
    task_batch_rows: int = 256
    max_restarts: int = 3
    max_task_retries: int = 3

    def __post_init__(self) -> None:
        if self.actors is not None and self.actors < 1:
            raise ValueError(f"actors must be >= 1, got {self.actors}")
        for name in ("embed_batch_rows", "llm_batch_rows", "task_batch_rows", "threads_per_actor"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.embed_gpus_per_actor is not None and self.embed_gpus_per_actor < 0:
            raise ValueError(f"embed_gpus_per_actor must be >= 0, got {self.embed_gpus_per_actor}")
        if self.cpus_per_actor <= 0:
            raise ValueError(f"cpus_per_actor must be > 0, got {self.cpus_per_actor}")
        if self.max_restarts < 0 or self.max_task_retries < 0:
            raise ValueError("max_restarts and max_task_retries must be >= 0")


@dataclass(frozen=True)
class Placement:
    """What one actor of a pool (or one task) asks of the scheduler."""

    num_cpus: float
    num_gpus: float
    threads: int | None

    def actor_options(self, options: RayOptions) -> dict[str, Any]:
        """``ActorClass.options(...)`` keywords: resources, restarts, retries, environment."""
        return {
            "num_cpus": self.num_cpus,
            "num_gpus": self.num_gpus,
            "max_restarts": options.max_restarts,
            "max_task_retries": options.max_task_retries,
        }


@dataclass(frozen=True)
class Cluster:
    """The resources seen at connection time and the options of the build."""

    cpus: float
    gpus: float
    options: RayOptions

    @property
    def actors(self) -> int:
        """Actors per model pool (``RayOptions.actors``, else one per GPU, else per CPU)."""
        if self.options.actors is not None:
            return self.options.actors
        return max(1, int(self.gpus) if self.gpus >= 1 else int(self.cpus))

    def embed_gpus(self, llm_gpus: float) -> float:
        """GPUs of one embedding actor beside LLM actors of ``llm_gpus`` GPUs each.

        ``RayOptions.embed_gpus_per_actor`` when set; else a whole GPU when the cluster has
        one per embedding actor besides the LLM actors' GPUs, else ``SHARED_EMBED_GPUS``
        (module docstring). Without GPUs the placement reserves none either way.
        """
        if self.options.embed_gpus_per_actor is not None:
            return float(self.options.embed_gpus_per_actor)
        left = self.gpus - self.actors * llm_gpus
        return 1.0 if left >= self.actors else SHARED_EMBED_GPUS

    def placement(self, gpus_per_actor: float) -> Placement:
        """Resources of one actor or task that would use ``gpus_per_actor`` GPUs.

        On a cluster without GPUs (or for a backend that needs none: 0) it reserves only
        ``cpus_per_actor`` and runs with ``threads_per_actor`` threads.
        """
        if self.gpus > 0 and gpus_per_actor > 0:
            return Placement(self.options.cpus_per_actor, float(gpus_per_actor), None)
        return Placement(self.options.cpus_per_actor, 0.0, self.options.threads_per_actor)


@contextlib.contextmanager
def connect(options: RayOptions) -> Iterator[Cluster]:
    """Join (or start) the Ray cluster for one build; leave it as it was found.

    A cluster this call started is shut down at the end; one the process had already joined
    stays. Ray Data's own progress bars are replaced by the build's rows-per-stage progress,
    and its per-dataset INFO lines are silenced for the duration.

    Parameters
    ----------
    options:
        The build's options (``address`` among them).

    Yields
    ------
    Cluster
        The resources and options.
    """
    ray = require_ray()
    started = False
    if not ray.is_initialized():
        ray.init(address=options.address, include_dashboard=False, log_to_driver=True)
        started = True
    ctx = ray.data.DataContext.get_current()
    saved = (ctx.enable_progress_bars, ctx.execution_options.preserve_order)
    data_log = logging.getLogger("ray.data")
    saved_level = data_log.level
    # Ordered output lets the documents dataset keep the source's order (doc keys and node ids
    # follow it); every other dataset also carries row positions and is checked against them.
    ctx.enable_progress_bars = False
    ctx.execution_options.preserve_order = True
    data_log.setLevel(logging.WARNING)
    try:
        resources = ray.cluster_resources()
        yield Cluster(
            cpus=float(resources.get("CPU", 1.0)),
            gpus=float(resources.get("GPU", 0.0)),
            options=options,
        )
    finally:
        ctx.enable_progress_bars, ctx.execution_options.preserve_order = saved
        data_log.setLevel(saved_level)
        if started:
            ray.shutdown()

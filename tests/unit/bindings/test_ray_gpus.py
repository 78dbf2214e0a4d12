"""How many GPUs a Ray build's actors reserve (``distributed.cluster``); no Ray needed."""

from __future__ import annotations

import pytest

from graphstrata.bindings.cli.build import _ray_options
from graphstrata.bindings.cli.main import build_parser
from graphstrata.bindings.distributed.backends import llm_gpus
from graphstrata.bindings.distributed.cluster import SHARED_EMBED_GPUS, Cluster, RayOptions
from graphstrata.bindings.distributed.workers import BackendSpec

EXTRACTIVE = BackendSpec("llm", "extractive")
VLLM = BackendSpec("llm", "vllm:/models/qwen")
VLLM_TP2 = BackendSpec("llm", "vllm:/models/qwen?tp=2")


def embed_gpus(cluster: Cluster, llm: BackendSpec) -> float:
    return cluster.placement(cluster.embed_gpus(llm_gpus(cluster, llm))).num_gpus


def test_an_embedding_actor_gets_a_whole_gpu_when_there_is_one() -> None:
    gpus = Cluster(cpus=16, gpus=4, options=RayOptions())
    assert embed_gpus(gpus, EXTRACTIVE) == 1.0
    assert embed_gpus(gpus, BackendSpec("llm", "openai:m@http://h/v1")) == 1.0
    # vLLM on every GPU: a whole GPU each would ask for 8 of 4, so the actors share.
    assert embed_gpus(gpus, VLLM) == SHARED_EMBED_GPUS
    # Two vLLM actors of 1 GPU leave one GPU for each of the two embedding actors.
    two = Cluster(cpus=16, gpus=4, options=RayOptions(actors=2))
    assert embed_gpus(two, VLLM) == 1.0 and embed_gpus(two, VLLM_TP2) == SHARED_EMBED_GPUS
    # Set explicitly, the option wins.
    assert embed_gpus(Cluster(16, 4, RayOptions(embed_gpus_per_actor=0.5)), VLLM) == 0.5


def test_a_cpu_cluster_is_unchanged() -> None:
    cpus = Cluster(cpus=2, gpus=0, options=RayOptions())
    placement = cpus.placement(cpus.embed_gpus(llm_gpus(cpus, EXTRACTIVE)))
    assert (placement.num_cpus, placement.num_gpus, placement.threads) == (0.5, 0.0, 1)
    forced = Cluster(cpus=2, gpus=0, options=RayOptions(embed_gpus_per_actor=1.0))
    assert forced.placement(forced.embed_gpus(0.0)).num_gpus == 0.0


def test_the_command_line_option_flows() -> None:
    args = build_parser().parse_args(
        ["index", "src", "--out", "ix", "--ray", "--ray-embed-gpus", "1"]
    )
    assert _ray_options(args).embed_gpus_per_actor == 1.0
    plain = build_parser().parse_args(["insert", "ix", "src", "--ray"])
    assert _ray_options(plain).embed_gpus_per_actor is None
    with pytest.raises(ValueError, match="embed_gpus_per_actor must be >= 0"):
        RayOptions(embed_gpus_per_actor=-1)

"""The thread budget of each process role (``bindings/threads.py``), read back from the
libraries themselves: threadpoolctl, ``numba.get_num_threads``, the ONNX Runtime session
options, torch. Nothing here times anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphstrata.bindings import threads
from graphstrata.bindings.cli.main import build_parser
from graphstrata.bindings.server import ServerSettings
from graphstrata.engine.config import ConfigError

ROOT = Path(__file__).resolve().parents[3]

# Applied in a fresh interpreter: Numba's threading layer and OpenMP's wait policy can only be
# chosen before its pool starts, and a budget is process-wide.
PROBE = textwrap.dedent(
    """
    import json, sys, threading
    from concurrent.futures import ThreadPoolExecutor
    if sys.argv[3] == "torch":
        import torch
    import numba, os, threadpoolctl
    from graphstrata.bindings import threads
    from graphstrata.bindings.embed.onnx import OnnxMiniLMEmbedder
    b = threads.apply(sys.argv[1], sys.argv[2] or None)
    options = OnnxMiniLMEmbedder().session_options()
    with ThreadPoolExecutor(1, initializer=threads.thread_initializer(b)) as pool:
        pooled = pool.submit(numba.get_num_threads).result()
    plain = []
    t = threading.Thread(target=lambda: plain.append(numba.get_num_threads()))
    t.start(); t.join()
    blas = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    torch = sys.modules.get("torch")
    print(json.dumps({
        "budget": b.__dict__, "blas": blas, "numba": numba.get_num_threads(),
        "numba_pool_thread": pooled, "numba_new_thread": plain[0],
        "numba_max": numba.config.NUMBA_NUM_THREADS, "layer": numba.threading_layer(),
        "omp_wait": os.environ.get("OMP_WAIT_POLICY"),
        "onnx_intra": options.intra_op_num_threads, "onnx_inter": options.inter_op_num_threads,
        "torch": torch.get_num_threads() if torch is not None else None,
    }))
    """
)


def probe(role: str, override: str = "", torch: bool = False) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", threads.ENV)}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, role, override, "torch" if torch else "-"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_budget_of_each_role_over_four_cores():
    server = threads.budget("server", 4)
    assert (server.blas, server.numba, server.onnx, server.torch) == (1, 1, 1, 1)
    assert threads.budget("server", 32).onnx == 24  # the 32 cores a pool of 8 leaves
    assert (server.search_pool, server.numba_layer, server.passive_omp) == (3, "threadsafe", True)
    query = threads.budget("query", 4)
    assert (query.blas, query.numba, query.onnx, query.torch) == (1, 4, 4, 1)
    for role in ("build", "worker"):
        b = threads.budget(role, 4)
        assert (b.blas, b.numba, b.onnx, b.torch, b.numba_layer) == (4, 4, 4, 4, None)
    one = threads.budget("build", 1)
    assert (one.blas, one.numba, one.onnx, one.torch) == (1, 1, 1, 1)
    assert threads.budget("server", 64).search_pool == 8


def test_default_leaves_every_library_alone_and_env_is_the_fallback(monkeypatch):
    b = threads.budget("server", "default")
    assert (b.blas, b.numba, b.numba_layer, b.onnx, b.torch, b.passive_omp) == (
        None,
        None,
        None,
        None,
        None,
        False,
    )
    monkeypatch.setenv(threads.ENV, "3")
    assert threads.budget("build").cores == 3
    assert threads.budget("build", 2).cores == 2  # the explicit value wins over the env
    monkeypatch.setenv(threads.ENV, "")
    assert threads.budget("build").cores == threads.available_cores()


@pytest.mark.parametrize("value", ["0", "-1", "many", 0])
def test_invalid_overrides_are_refused(value):
    with pytest.raises(ValueError, match="GRAPHSTRATA_THREADS"):
        threads.budget("query", value)
    with pytest.raises(ConfigError, match="threads"):
        ServerSettings(threads=value).check()


def test_unknown_role_is_refused():
    with pytest.raises(ValueError, match="unknown thread role"):
        threads.budget("gpu")


@pytest.mark.parametrize("role", threads.ROLES)
def test_each_role_applies_its_budget(role):
    got = probe(role)
    b = got["budget"]
    assert b["role"] == role and b["cores"] == threads.available_cores()
    assert got["blas"] and set(got["blas"]) == {b["blas"]}
    assert got["numba"] == min(b["numba"], got["numba_max"])
    assert got["numba_pool_thread"] == got["numba"]
    assert got["onnx_intra"] == b["onnx"] and got["onnx_inter"] == 1
    assert got["omp_wait"] == "PASSIVE"
    if role == "server":
        assert got["layer"] in ("omp", "tbb")  # several request threads may run kernels


def test_one_thread_override_and_torch_already_imported():
    got = probe("build", "1", torch=True)
    assert got["blas"] and set(got["blas"]) == {1}
    assert (got["numba"], got["numba_pool_thread"], got["onnx_intra"], got["torch"]) == (1, 1, 1, 1)


def test_library_defaults_touch_nothing():
    got = probe("server", "default")
    assert got["omp_wait"] is None
    assert got["numba"] == got["numba_max"] == got["numba_new_thread"]


def test_cli_commands_carry_their_role_and_the_override():
    parser = build_parser()
    args = parser.parse_args(["query", "ix", "q", "--threads", "1"])
    assert (args.thread_role, args.threads) == ("query", 1)
    args = parser.parse_args(["index", "docs", "--out", "ix"])
    assert (args.thread_role, args.threads) == ("build", None)
    args = parser.parse_args(["serve", "ix", "--threads", "default"])
    assert not hasattr(args, "thread_role")  # the app applies the server role itself
    from graphstrata.bindings.server.command import settings_from_args

    assert settings_from_args(args).threads == "default"
    with pytest.raises(SystemExit):
        parser.parse_args(["query", "ix", "q", "--threads", "0"])


def test_a_local_llm_gets_the_budgets_torch_threads(monkeypatch):
    from graphstrata.bindings import threads

    monkeypatch.setattr(threads, "_current", threads.budget("server", 4))
    assert threads.llm_threads() == 1  # a server's requests are its parallelism
    monkeypatch.setattr(threads, "_current", threads.budget("build", 3))
    assert threads.llm_threads() == 3
    monkeypatch.setattr(threads, "_current", None)
    assert threads.llm_threads() == threads.available_cores()

"""What tests share besides fixtures: paths, oracles, builders and comparisons.

Test modules import from here, never from each other (``tests/unit/test_test_layout.py``
checks); fixtures stay in ``conftest.py``. One module per concept: :mod:`.oracles` (plain
Python versions of the fusion kernels and the fused modes' feedback round), :mod:`.hierarchy`
(a small hierarchy index and its invariants), :mod:`.sparse` (random texts, the bm25s oracle
and fresh-build comparisons of the BM25 index), :mod:`.vectors` (random unit and clustered
vectors, exact neighbours), :mod:`.snapshots` (snapshot equality), :mod:`.cli` (the
command line in a subprocess), :mod:`.terminal` (the command line on a pseudo-terminal), :mod:`.fake_openai_server` (an OpenAI-compatible server on
loopback), :mod:`.ray_cluster` (one local Ray cluster, and comparisons of Ray builds) and
:mod:`.onnx_models` (the ``onnx.helper`` oracle of the ONNX writer, random graphs, a tiny BERT).
"""

from __future__ import annotations

from pathlib import Path

#: The repository root.
REPO = Path(__file__).resolve().parents[2]
SAMPLE_DIR = REPO / "examples" / "sample"
SAMPLE_JSONL = REPO / "examples" / "sample.jsonl"
SAMPLE_QA = REPO / "examples" / "sample_qa.jsonl"

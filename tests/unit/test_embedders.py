from __future__ import annotations

import numpy as np
import pytest

from graphstrata.bindings.backends import make_embedder
from graphstrata.bindings.embedders import HashingEmbedder
from graphstrata.engine.config import ConfigError
from graphstrata.engine.interfaces import Embedder


def test_packaged_minilm_loads_offline_and_normalizes(minilm_embedder):
    assert isinstance(minilm_embedder, Embedder)
    assert minilm_embedder.name == "all-MiniLM-L6-v2" and minilm_embedder.dim == 384
    assert minilm_embedder.max_input_tokens == 256
    vecs = minilm_embedder.embed(
        ["The Halvorsen Observatory sits on Mount Kjell.", "Lake Sundra froze early."]
    )
    assert vecs.dtype == np.float32 and vecs.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    same = minilm_embedder.embed(["The Halvorsen Observatory sits on Mount Kjell."])
    np.testing.assert_allclose(same[0], vecs[0], atol=1e-5)
    close = minilm_embedder.embed(["An observatory on a mountain called Kjell."])[0]
    assert float(close @ vecs[0]) > float(close @ vecs[1])


def test_hashing_embedder_is_deterministic_and_normalized():
    emb = HashingEmbedder(32)
    a = emb.embed(["alpha beta", "alpha beta", ""])
    np.testing.assert_array_equal(a[0], a[1])
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)


def test_embedder_specs():
    assert make_embedder("hashing:16").dim == 16
    assert make_embedder("all-MiniLM-L6-v2").name == "all-MiniLM-L6-v2"
    with pytest.raises(ConfigError):
        make_embedder("definitely-not-a-model")

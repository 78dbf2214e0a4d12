"""The torch-free BERT graph (``bert_graph``) against the torch model it replaces.

The comparison needs torch + transformers (the ``cpu``/``torch`` extras) and is skipped
without them; the graph's shape, the absence of torch and of the ``onnx`` package on the
fp32 path, and the file's equality with the ``onnx.helper``-built one are checked everywhere
(``onnx`` is in the ``dev`` extra).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from graphstrata.bindings.embed import onnx as eo
from graphstrata.bindings.embed.bert_graph import build_bert_model, write_bert_onnx
from graphstrata.bindings.embed.models import packaged_minilm_path
from graphstrata.engine import EmbedderError
from tests.helpers.onnx_models import helper_model, write_tiny_bert

REPO = Path(__file__).resolve().parents[4]
MAX_TOKENS = 256


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bert-graph") / "model.onnx"
    write_bert_onnx(packaged_minilm_path(), path)
    return path


def _tokenize(texts: list[str], width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Right-padded ``input_ids`` / ``attention_mask`` as the embedder builds them."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(packaged_minilm_path() / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_TOKENS)
    encodings = tok.encode_batch(texts)
    width = width or max(len(e.ids) for e in encodings)
    ids = np.zeros((len(texts), width), dtype=np.int64)
    mask = np.zeros((len(texts), width), dtype=np.int64)
    for i, enc in enumerate(encodings):
        ids[i, : len(enc.ids)] = enc.ids
        mask[i, : len(enc.ids)] = 1
    return ids, mask


def _run_graph(path: Path, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (out,) = session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})
    return np.asarray(out)


def _torch_mean_pooled(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """What the former ``torch.onnx.export`` traced: BertModel (eager) + mean pooling."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    bert = transformers.AutoModel.from_pretrained(
        str(packaged_minilm_path()), local_files_only=True, attn_implementation="eager"
    ).eval()
    t_ids, t_mask = torch.from_numpy(ids), torch.from_numpy(mask)
    with torch.no_grad():
        hidden = bert(
            input_ids=t_ids, attention_mask=t_mask, token_type_ids=torch.zeros_like(t_ids)
        ).last_hidden_state
        m = t_mask.unsqueeze(-1).to(hidden.dtype)
        return ((hidden * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)).numpy()


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.sum(a * b, axis=1)


BATCH = [
    "a",
    "Who founded Meridian Optics?",
    "Ünïcödé — 東京タワー は 高い; naïve café 🚀",
    "Lake Sundra froze early that year, and the fishermen stayed ashore. " * 12,
    "word " * 400,  # truncated: exactly MAX_TOKENS word pieces
]


def test_padded_batch_equals_torch(graph_file):
    ids, mask = _tokenize(BATCH)
    assert ids.shape[1] == MAX_TOKENS and mask.sum(1).min() < 5  # long and heavily padded
    got = _run_graph(graph_file, ids, mask)
    want = _torch_mean_pooled(ids, mask)
    assert got.shape == want.shape == (len(BATCH), 384)
    cos = _cosines(got, want)
    assert cos.min() >= 1 - 1e-5, cos.tolist()
    np.testing.assert_allclose(got, want, atol=1e-4)


@pytest.mark.parametrize("text", ["", "Halvorsen", "word " * 100, "word " * 300])
def test_single_texts_equal_torch(graph_file, text):
    ids, mask = _tokenize([text])
    cos = _cosines(_run_graph(graph_file, ids, mask), _torch_mean_pooled(ids, mask))
    assert cos.min() >= 1 - 1e-5


def test_padding_does_not_change_a_row(graph_file):
    """Extra padded columns (masked keys) leave the pooled vector alone."""
    ids, mask = _tokenize(["Who founded Meridian Optics?"])
    wide_ids, wide_mask = _tokenize(["Who founded Meridian Optics?"], width=40)
    np.testing.assert_allclose(
        _run_graph(graph_file, ids, mask), _run_graph(graph_file, wide_ids, wide_mask), atol=1e-5
    )


def test_bits_equal_the_helper_built_file(graph_file, tmp_path):
    """ONNX Runtime gives the same bits for the written file as for the file ``onnx.helper``
    built from the same graph (what ``bert_graph`` wrote before it had its own writer)."""
    reference = tmp_path / "helper.onnx"
    reference.write_bytes(
        helper_model(build_bert_model(packaged_minilm_path())).SerializeToString()
    )
    ids, mask = _tokenize(BATCH)
    got, want = _run_graph(graph_file, ids, mask), _run_graph(reference, ids, mask)
    assert got.shape == (len(BATCH), 384)
    np.testing.assert_array_equal(got, want)


def test_graph_interface_matches_the_embedder():
    model = build_bert_model(packaged_minilm_path())
    inputs = {i.name: list(i.shape) for i in model.graph.inputs}
    outputs = {o.name: list(o.shape) for o in model.graph.outputs}
    assert inputs == {"input_ids": ["batch", "sequence"], "attention_mask": ["batch", "sequence"]}
    assert outputs == {"sentence_embedding": ["batch", 384]}
    assert model.opset == eo.DEFAULT_OPSET
    with pytest.raises(ValueError, match="opset"):
        build_bert_model(packaged_minilm_path(), opset=13)


def test_export_imports_no_torch(tmp_path):
    code = textwrap.dedent(
        """
        import json, sys
        from graphstrata.bindings.embed import onnx as eo
        path = eo.ensure_onnx_model("int8", cache=sys.argv[1])
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in ("torch", "transformers", "sentence_transformers"))
        print(json.dumps({"heavy": heavy, "exports": eo.EXPORT_COUNTS, "path": str(path)}))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["heavy"] == []
    assert result["exports"] == {"fp32": 1, "int8": 1} and Path(result["path"]).exists()


_NO_ONNX = textwrap.dedent(
    """
    import json, sys
    sys.modules["onnx"] = None  # `import onnx` (and onnx.anything) now fails
    import numpy as np
    import onnxruntime as ort
    from graphstrata.bindings.embed import onnx as eo
    from graphstrata.engine import EmbedderError

    model_dir, cache = sys.argv[1], sys.argv[2]
    path = eo.ensure_onnx_model("fp32", model_dir, cache)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ids = np.array([[2, 7, 9, 0], [4, 0, 0, 0]], dtype=np.int64)
    mask = (ids > 0).astype(np.int64)
    (out,) = session.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})
    try:
        eo.ensure_onnx_model("int8", model_dir, cache)
        int8 = "exported"
    except EmbedderError as exc:
        int8 = str(exc)
    print(json.dumps({"shape": list(out.shape), "finite": bool(np.isfinite(out).all()),
                      "exports": eo.EXPORT_COUNTS, "int8": int8,
                      "onnx": sys.modules["onnx"] is not None}))
    """
)


def test_fp32_export_needs_no_onnx_package(tmp_path):
    """With ``onnx`` unimportable, a small random BERT is exported, loaded and run; the int8
    variant fails with the one line naming its extra."""
    model_dir = write_tiny_bert(tmp_path / "tiny")
    proc = subprocess.run(
        [sys.executable, "-c", _NO_ONNX, str(model_dir), str(tmp_path / "cache")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["shape"] == [2, 8] and result["finite"] and result["onnx"] is False
    assert result["exports"] == {"fp32": 1, "int8": 0}
    assert result["int8"] == "minilm-int8 needs the int8 extra: pip install 'graphstrata[int8]'"


def test_a_graph_onnx_runtime_refuses_is_not_cached(tmp_path):
    """Weights of inconsistent shapes make a file ONNX Runtime refuses to load: the export
    fails with an EmbedderError and leaves nothing in the cache."""
    model_dir = write_tiny_bert(tmp_path / "bad", bad_query_inputs=6)
    cache = tmp_path / "cache"
    with pytest.raises(EmbedderError, match="ONNX Runtime refuses the exported graph"):
        eo.ensure_onnx_model("fp32", model_dir, cache)
    assert not list((cache / "onnx").glob("*.onnx"))

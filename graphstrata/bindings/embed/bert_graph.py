"""The BERT encoder + mean pooling as an ONNX graph, written from safetensors without torch.

What it computes is what sentence-transformers computes for all-MiniLM-L6-v2 (the
``BertModel`` of ``transformers`` in eval mode, eager attention, followed by the ``Pooling``
module in mean mode), so that the default install needs no torch to produce its model file:

- embeddings: ``word[input_ids] + position[0:seq] + token_type[0]``, then LayerNorm;
- per layer: multi-head self-attention (``softmax(q k^T / sqrt(d) + bias)`` with
  ``bias = (1 - mask) * float32.min`` over padded keys), dense + residual + LayerNorm, a GELU
  (the exact, erf form) feed-forward, dense + residual + LayerNorm;
- mean pooling: ``sum(h * mask) / max(sum(mask), 1e-9)`` over the sequence.

The L2 normalization is left to the embedder (numpy), as with the former torch export. Dense
layers are ``MatMul`` by the transposed weight followed by ``Add`` of the bias, the layout
``torch.onnx.export`` produces, so ONNX Runtime's fusions (GELU, LayerNorm, attention) and
``quantize_dynamic`` see the same patterns as before.

The file is written by :mod:`graphstrata.bindings.embed.onnx_proto` (the protobuf wire format,
byte for byte what ``onnx.helper`` + ``SerializeToString`` wrote before), so the ``onnx``
package is not needed. Only numpy, ``safetensors`` and that sibling module are imported,
the latter relatively and no other graphstrata module, so ``benchmarks/gpu/embed.py`` loads
this directory as a package by path on a machine without graphstrata. Errors are
``ValueError`` (:func:`graphstrata.bindings.embed.onnx.ensure_onnx_model` turns them into
``EmbedderError``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .onnx_proto import FLOAT, INT64, Graph, Model, Node, Tensor, ValueInfo, write_model

#: Lowest opset with ``LayerNormalization`` (17).
MIN_OPSET = 17
_FLOAT32_MIN = float(np.finfo(np.float32).min)


def read_bert_config(model_dir: Path) -> dict[str, Any]:
    """The ``config.json`` of a BERT model directory, checked for what the graph supports."""
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{model_dir}: no readable config.json ({exc})") from exc
    if config.get("model_type") != "bert":
        raise ValueError(f"{model_dir}: a BERT model is needed, got {config.get('model_type')}")
    if config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"{model_dir}: only the exact GELU is supported")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"{model_dir}: only absolute position embeddings are supported")
    return config


def load_weights(model_dir: Path) -> dict[str, np.ndarray]:
    """The float32 tensors of ``model.safetensors`` (numpy, no torch)."""
    from safetensors.numpy import load_file

    try:
        weights = load_file(str(model_dir / "model.safetensors"))
    except Exception as exc:  # safetensors raises its own error types
        raise ValueError(f"cannot read {model_dir / 'model.safetensors'}: {exc}") from exc
    # Some checkpoints carry the encoder under a "bert." prefix (BertFor* heads).
    return {k.removeprefix("bert."): v for k, v in weights.items()}


class _Graph:
    """Collects nodes and initializers; ``op`` returns the output name of the node it adds."""

    def __init__(self, weights: dict[str, np.ndarray]):
        self.weights = weights
        self.nodes: list[Node] = []
        self.initializers: list[Tensor] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(Tensor(name, np.ascontiguousarray(value)))
        return name

    def weight(self, key: str, transpose: bool = False) -> str:
        try:
            value = self.weights[key]
        except KeyError as exc:
            raise ValueError(f"model.safetensors has no tensor {key!r}") from exc
        value = value.astype(np.float32)
        return self.const(key, value.T if transpose else value)

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(Node(op_type, inputs, (out,), attrs))
        return out

    def dense(self, x: str, prefix: str) -> str:
        product = self.op("MatMul", x, self.weight(f"{prefix}.weight", transpose=True))
        return self.op("Add", product, self.weight(f"{prefix}.bias"))

    def layer_norm(self, x: str, prefix: str, eps: float) -> str:
        return self.op(
            "LayerNormalization",
            x,
            self.weight(f"{prefix}.weight"),
            self.weight(f"{prefix}.bias"),
            axis=-1,
            epsilon=eps,
        )


def build_bert_model(model_dir: str | Path, opset: int = MIN_OPSET) -> Model:
    """The ONNX model (:class:`~graphstrata.bindings.embed.onnx_proto.Model`) of the encoder +
    mean pooling of ``model_dir``.

    Inputs ``input_ids`` and ``attention_mask`` (int64 ``[batch, sequence]``); output
    ``sentence_embedding`` (float32 ``[batch, hidden]``, not normalized).
    """
    if opset < MIN_OPSET:
        raise ValueError(f"the BERT graph needs opset >= {MIN_OPSET}, got {opset}")
    model_dir = Path(model_dir)
    config = read_bert_config(model_dir)
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    head_dim = hidden // heads
    g = _Graph(load_weights(model_dir))

    # Embeddings. token_type_ids are all 0 (as in sentence-transformers for one text), so
    # the token-type row is folded into the position table.
    positions = g.weights["embeddings.position_embeddings.weight"].astype(np.float32)
    type0 = g.weights["embeddings.token_type_embeddings.weight"][0].astype(np.float32)
    table = g.const("embeddings.position_plus_type", positions + type0)
    i64 = np.int64
    seq_len = g.op(
        "Slice",
        g.op("Shape", "input_ids"),
        g.const("c_one", np.array([1], dtype=i64)),
        g.const("c_two", np.array([2], dtype=i64)),
    )
    zero = g.const("c_zero", np.array([0], dtype=i64))
    words = g.op("Gather", g.weight("embeddings.word_embeddings.weight"), "input_ids")
    pos = g.op("Slice", table, zero, seq_len, zero)
    x = g.layer_norm(g.op("Add", words, pos), "embeddings.LayerNorm", eps)

    # Additive attention bias over keys: 0 where attended, float32.min where padded.
    mask = g.op("Cast", "attention_mask", to=FLOAT)
    inverted = g.op("Sub", g.const("c_onef", np.array(1.0, dtype=np.float32)), mask)
    bias = g.op("Mul", inverted, g.const("c_fmin", np.array(_FLOAT32_MIN, dtype=np.float32)))
    bias = g.op("Unsqueeze", bias, g.const("c_axes12", np.array([1, 2], dtype=i64)))
    split = g.const("c_heads", np.array([0, 0, heads, head_dim], dtype=i64))
    merge = g.const("c_hidden", np.array([0, 0, hidden], dtype=i64))
    scale = g.const("c_scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    sqrt2 = g.const("c_sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = g.const("c_half", np.array(0.5, dtype=np.float32))

    for i in range(layers):
        p = f"encoder.layer.{i}"

        def heads_of(name: str, perm: list[int], p: str = p, x: str = x) -> str:
            projected = g.dense(x, f"{p}.attention.self.{name}")
            return g.op("Transpose", g.op("Reshape", projected, split), perm=perm)

        q = heads_of("query", [0, 2, 1, 3])  # [batch, heads, seq, head_dim]
        k = heads_of("key", [0, 2, 3, 1])  # [batch, heads, head_dim, seq]
        v = heads_of("value", [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge)
        attended = g.dense(context, f"{p}.attention.output.dense")
        x = g.layer_norm(g.op("Add", attended, x), f"{p}.attention.output.LayerNorm", eps)
        inner = g.dense(x, f"{p}.intermediate.dense")
        # GELU, exact: 0.5 * x * (1 + erf(x / sqrt(2))) (ONNX Runtime fuses this pattern).
        gelu = g.op(
            "Mul",
            g.op("Mul", inner, g.op("Add", g.op("Erf", g.op("Div", inner, sqrt2)), "c_onef")),
            half,
        )
        out = g.dense(gelu, f"{p}.output.dense")
        x = g.layer_norm(g.op("Add", out, x), f"{p}.output.LayerNorm", eps)

    # Mean pooling over the unpadded positions.
    weights3 = g.op("Unsqueeze", mask, g.const("c_axis2", np.array([2], dtype=i64)))
    axis1 = g.const("c_axis1", np.array([1], dtype=i64))
    summed = g.op("ReduceSum", g.op("Mul", x, weights3), axis1, keepdims=0)
    counts = g.op("ReduceSum", weights3, axis1, keepdims=0)
    floor = g.const("c_eps", np.array(1e-9, dtype=np.float32))
    pooled = g.op("Div", summed, g.op("Max", counts, floor))
    g.nodes.append(Node("Identity", (pooled,), ("sentence_embedding",)))

    dims = ("batch", "sequence")
    graph = Graph(
        name="all-MiniLM-L6-v2-mean-pooled",
        nodes=g.nodes,
        inputs=(
            ValueInfo("input_ids", INT64, dims),
            ValueInfo("attention_mask", INT64, dims),
        ),
        outputs=(ValueInfo("sentence_embedding", FLOAT, ("batch", hidden)),),
        initializers=g.initializers,
    )
    # IR 8 is read by every ONNX Runtime since 1.14.
    return Model(graph, opset=opset, ir_version=8, producer_name="graphstrata")


def write_bert_onnx(model_dir: str | Path, dest: str | Path, opset: int = MIN_OPSET) -> None:
    """Build the graph of ``model_dir`` (:func:`build_bert_model`) and write it to ``dest``.

    Nothing is checked here: ONNX Runtime loading the file is the check
    (:func:`graphstrata.bindings.embed.onnx.export_fp32`).
    """
    write_model(build_bert_model(model_dir, opset), dest)

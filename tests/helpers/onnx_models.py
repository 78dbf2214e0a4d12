"""ONNX models for the tests of the ONNX writer (``graphstrata/bindings/embed/onnx_proto.py``).

:func:`helper_model` is the oracle: the same model built with the ``onnx`` package's helper API
(``make_node``, ``numpy_helper.from_array``, ``make_tensor_value_info``, ``make_graph``,
``make_model``), the way ``bert_graph`` built it before it had a writer of its own.
:func:`random_model` draws small graphs over every field the writer encodes, edge cases
included; :func:`write_tiny_bert` writes a small random BERT model directory (config.json and
model.safetensors, numpy only) for the export path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from graphstrata.bindings.embed.onnx_proto import (
    FLOAT,
    INT64,
    Graph,
    Model,
    Node,
    Tensor,
    ValueInfo,
)


def helper_model(model: Model) -> Any:
    """``model`` as an ``onnx.ModelProto`` built with ``onnx.helper`` (the oracle)."""
    from onnx import AttributeProto, helper, numpy_helper

    nodes = []
    for node in model.graph.nodes:
        # make_node cannot infer the type of an empty list: those are added with their type,
        # and the attributes sorted by name again, as make_node sorts them.
        empty = sorted(
            k for k, v in node.attributes.items() if isinstance(v, list | tuple) and not v
        )
        attrs = {k: v for k, v in node.attributes.items() if k not in empty}
        proto = helper.make_node(
            node.op_type, list(node.inputs), list(node.outputs), name=node.name or None, **attrs
        )
        if empty:
            every = list(proto.attribute) + [
                helper.make_attribute(k, [], attr_type=AttributeProto.INTS) for k in empty
            ]
            del proto.attribute[:]
            proto.attribute.extend(sorted(every, key=lambda a: a.name))
        nodes.append(proto)
    graph = helper.make_graph(
        nodes,
        model.graph.name,
        [
            helper.make_tensor_value_info(v.name, v.elem_type, list(v.shape))
            for v in model.graph.inputs
        ],
        [
            helper.make_tensor_value_info(v.name, v.elem_type, list(v.shape))
            for v in model.graph.outputs
        ],
        initializer=[numpy_helper.from_array(t.array, t.name) for t in model.graph.initializers],
    )
    proto = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", model.opset)],
        producer_name=model.producer_name,
    )
    proto.ir_version = model.ir_version
    return proto


_INT64_EDGES = [0, 1, -1, 127, 128, -128, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63)]
_FLOAT_EDGES = [0.0, -0.0, 1e-12, -2.5, 3.4e38, 1e-45, float("inf"), float("-inf"), 0.1]


def _attribute(rng: np.random.Generator) -> Any:
    kind = rng.integers(4)
    if kind == 0:
        return (
            int(rng.choice(_INT64_EDGES))
            if rng.random() < 0.5
            else int(rng.integers(-(10**6), 10**6))
        )
    if kind == 1:
        return float(rng.choice(_FLOAT_EDGES)) if rng.random() < 0.5 else float(rng.normal())
    if kind == 2:
        return [int(v) for v in rng.choice(_INT64_EDGES, size=int(rng.integers(0, 5)))]
    return [int(v) for v in rng.integers(-300, 300, size=int(rng.integers(0, 4)))]


def _array(rng: np.random.Generator) -> np.ndarray:
    shape = tuple(int(d) for d in rng.integers(0, 4, size=int(rng.integers(0, 4))))
    if rng.random() < 0.5:
        return rng.normal(size=shape).astype(np.float32)
    return rng.integers(-(2**62), 2**62, size=shape, dtype=np.int64)


def _value_info(rng: np.random.Generator, name: str) -> ValueInfo:
    dims = [
        f"d{int(rng.integers(3))}" if rng.random() < 0.4 else int(rng.choice([0, 1, 7, 300, 2**40]))
        for _ in range(int(rng.integers(0, 4)))
    ]
    return ValueInfo(name, int(rng.choice([FLOAT, INT64])), dims)


def random_model(seed: int) -> Model:
    """A small random model: every field the writer encodes, none of it meant to run."""
    rng = np.random.default_rng(seed)
    names = ["x", "y", "ü_名", "a" * 200, ""]
    nodes = [
        Node(
            op_type=str(rng.choice(["Add", "MatMul", "Reshape", "Custom"])),
            inputs=[str(rng.choice(names)) for _ in range(int(rng.integers(0, 4)))],
            outputs=[f"out_{seed}_{i}_{j}" for j in range(int(rng.integers(1, 3)))],
            attributes={
                f"attr{k}": _attribute(rng) for k in rng.permutation(int(rng.integers(0, 5)))
            },
            name=f"node{i}" if rng.random() < 0.3 else "",
        )
        for i in range(int(rng.integers(0, 6)))
    ]
    tensors = [
        Tensor(f"w{i}" if rng.random() < 0.8 else "", _array(rng))
        for i in range(int(rng.integers(0, 5)))
    ]
    graph = Graph(
        name=f"random-{seed}" if seed % 3 else "",
        nodes=nodes,
        inputs=[_value_info(rng, f"in{i}") for i in range(int(rng.integers(0, 3)))],
        outputs=[_value_info(rng, f"out{i}") for i in range(int(rng.integers(0, 3)))],
        initializers=tensors,
    )
    return Model(
        graph,
        opset=int(rng.integers(1, 30)),
        ir_version=int(rng.integers(3, 12)),
        producer_name=str(rng.choice(["graphstrata", "", "p" * 150])),
    )


def write_tiny_bert(
    directory: Path,
    *,
    hidden: int = 8,
    heads: int = 2,
    layers: int = 2,
    vocab: int = 30,
    seed: int = 0,
    bad_query_inputs: int | None = None,
) -> Path:
    """A small random BERT model directory (``config.json`` + ``model.safetensors``, with the
    tensor names of ``transformers``' ``BertModel``), written with numpy.

    ``bad_query_inputs`` gives layer 0's query projection that many inputs instead of
    ``hidden``: a MatMul of mismatched shapes, which ONNX Runtime refuses when it loads the
    graph.
    """
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    inner, positions = 2 * hidden, 16
    directory.mkdir(parents=True, exist_ok=True)
    config = {
        "model_type": "bert",
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "intermediate_size": inner,
        "vocab_size": vocab,
        "max_position_embeddings": positions,
        "type_vocab_size": 2,
        "hidden_act": "gelu",
        "layer_norm_eps": 1e-12,
    }
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")

    def normal(*shape: int) -> np.ndarray:
        return (rng.normal(size=shape) * 0.2).astype(np.float32)

    def norm(prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}.weight": 1 + normal(hidden), f"{prefix}.bias": normal(hidden)}

    weights = {
        "embeddings.word_embeddings.weight": normal(vocab, hidden),
        "embeddings.position_embeddings.weight": normal(positions, hidden),
        "embeddings.token_type_embeddings.weight": normal(2, hidden),
        **norm("embeddings.LayerNorm"),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}"
        for name in ("query", "key", "value"):
            bad = bad_query_inputs if (i, name) == (0, "query") else None
            weights[f"{p}.attention.self.{name}.weight"] = normal(hidden, bad or hidden)
            weights[f"{p}.attention.self.{name}.bias"] = normal(hidden)
        weights[f"{p}.attention.output.dense.weight"] = normal(hidden, hidden)
        weights[f"{p}.attention.output.dense.bias"] = normal(hidden)
        weights.update(norm(f"{p}.attention.output.LayerNorm"))
        weights[f"{p}.intermediate.dense.weight"] = normal(inner, hidden)
        weights[f"{p}.intermediate.dense.bias"] = normal(inner)
        weights[f"{p}.output.dense.weight"] = normal(hidden, inner)
        weights[f"{p}.output.dense.bias"] = normal(hidden)
        weights.update(norm(f"{p}.output.LayerNorm"))
    save_file(weights, str(directory / "model.safetensors"))
    return directory

"""The ONNX writer (``onnx_proto``) against the ``onnx`` package it replaces on the default path.

The oracle (``tests/helpers/onnx_models.py``) builds the same model with ``onnx.helper``: the
writer's bytes must equal its ``SerializeToString()``, for the real MiniLM graph and for small
random graphs over every field the writer encodes. ``onnx`` is in the ``dev`` extra, so these
tests always run in ``make test``.
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from graphstrata.bindings.embed.bert_graph import build_bert_model
from graphstrata.bindings.embed.models import packaged_minilm_path
from graphstrata.bindings.embed.onnx_proto import (
    FLOAT,
    INT64,
    Graph,
    Model,
    Node,
    Tensor,
    ValueInfo,
    serialize_model,
    write_model,
)
from tests.helpers.onnx_models import helper_model, random_model


def _model(nodes=(), tensors=(), inputs=(), outputs=(), **kwargs) -> Model:
    graph = Graph("g", list(nodes), list(inputs), list(outputs), list(tensors))
    return Model(graph, **{"opset": 17, "ir_version": 8, "producer_name": "t", **kwargs})


def test_minilm_graph_is_byte_identical_to_the_helper_built_model(tmp_path):
    model = build_bert_model(packaged_minilm_path())
    oracle = helper_model(model)
    ours = serialize_model(model)
    assert len(ours) > 80_000_000  # the weights are in it
    assert ours == oracle.SerializeToString()
    onnx.checker.check_model(oracle)
    path = tmp_path / "m.onnx"
    write_model(model, path)  # written in pieces, the same bytes
    assert path.read_bytes() == ours


@pytest.mark.parametrize("seed", range(40))
def test_random_graphs_are_byte_identical(seed):
    model = random_model(seed)
    ours = serialize_model(model)
    assert ours == helper_model(model).SerializeToString()
    assert onnx.load_from_string(ours) == helper_model(model)


EDGE_NODES = [
    Node("Transpose", ["x"], ["y"], {"perm": []}),  # an empty INTS list
    Node("Op", ["x"], ["y"], {"a": -1, "b": -(2**63), "c": 2**63 - 1, "d": 0}),
    Node("Op", ["x"], ["y"], {"eps": 1e-12, "neg": -0.5, "zero": 0.0, "big": 3.0e38}),
    Node("Op", ["x", "", "z"], ["y"], {"perm": [0, -1, 2**40], "axis": -1}, name="named"),
    Node("Op", [], ["y"], {"z": 1, "a": 2.5, "m": [3]}),  # attributes written sorted by name
    Node("Identity", ["ü"], ["名"]),
]
EDGE_TENSORS = [
    Tensor("scalar_f", np.array(1.5, dtype=np.float32)),  # 0-d tensors
    Tensor("scalar_i", np.array(-7, dtype=np.int64)),
    Tensor("empty", np.zeros((0, 3), dtype=np.float32)),  # no data: raw_data is written empty
    Tensor("ints", np.array([[-1, 2**62], [0, -(2**63)]], dtype=np.int64)),
    Tensor("strided", np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]),
    Tensor("", np.ones(2, dtype=np.float32)),  # no name
]
EDGE_INFOS = [
    ValueInfo("fixed", FLOAT, [2, 0, 384]),
    ValueInfo("symbolic", INT64, ["batch", "sequence"]),
    ValueInfo("mixed", FLOAT, ["batch", 384]),
    ValueInfo("scalar", INT64, []),  # the empty shape is still written
]


@pytest.mark.parametrize("node", EDGE_NODES, ids=lambda n: n.op_type + str(sorted(n.attributes)))
def test_edge_case_nodes(node):
    model = _model(nodes=[node])
    assert serialize_model(model) == helper_model(model).SerializeToString()


@pytest.mark.parametrize("tensor", EDGE_TENSORS, ids=lambda t: t.name or "unnamed")
def test_edge_case_tensors(tensor):
    model = _model(tensors=[tensor])
    ours = serialize_model(model)
    assert ours == helper_model(model).SerializeToString()
    (back,) = onnx.load_from_string(ours).graph.initializer
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(back), tensor.array)


def test_big_endian_arrays_are_written_little_endian():
    """(``numpy_helper.from_array`` refuses them: the oracle is the same values in native order.)"""
    native = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    for values in (native, (native * 1e12).astype(np.int64)):
        swapped = values.astype(values.dtype.newbyteorder(">"))
        want = serialize_model(_model(tensors=[Tensor("w", values)]))
        assert serialize_model(_model(tensors=[Tensor("w", swapped)])) == want


def test_edge_case_value_infos_and_model_fields():
    model = _model(
        inputs=EDGE_INFOS[:2], outputs=EDGE_INFOS[2:], opset=1, ir_version=3, producer_name=""
    )
    assert serialize_model(model) == helper_model(model).SerializeToString()
    assert serialize_model(_model()) == helper_model(_model()).SerializeToString()


def test_a_written_graph_passes_the_checker_and_runs():
    """A small graph using every attribute kind bert_graph uses, checked and run."""
    model = _model(
        nodes=[
            Node("Cast", ["mask"], ["maskf"], {"to": FLOAT}),
            Node("Transpose", ["x"], ["xt"], {"perm": [1, 0]}),
            Node("Add", ["xt", "bias"], ["shifted"]),
            Node(
                "LayerNormalization",
                ["shifted", "scale", "bias"],
                ["normed"],
                {"axis": -1, "epsilon": 1e-5},
            ),
            Node("ReduceSum", ["normed", "axes"], ["summed"], {"keepdims": 0}),
            Node("Mul", ["summed", "maskf"], ["out"]),
        ],
        tensors=[
            Tensor("bias", np.array([0.5, -1.0], dtype=np.float32)),
            Tensor("scale", np.array([2.0, 1.0], dtype=np.float32)),
            Tensor("axes", np.array([1], dtype=np.int64)),
        ],
        inputs=[ValueInfo("x", FLOAT, [2, "n"]), ValueInfo("mask", INT64, ["n"])],
        outputs=[ValueInfo("out", FLOAT, ["n"])],
    )
    data = serialize_model(model)
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    x = np.array([[1.0, 2.0, 3.0], [4.0, 0.0, -1.0]], dtype=np.float32)
    mask = np.array([1, 0, 1], dtype=np.int64)
    (out,) = session.run(["out"], {"x": x, "mask": mask})
    xt = x.T + np.array([0.5, -1.0], dtype=np.float32)
    mean, var = xt.mean(1, keepdims=True), xt.var(1, keepdims=True)
    normed = (xt - mean) / np.sqrt(var + 1e-5) * np.array([2.0, 1.0]) + np.array([0.5, -1.0])
    np.testing.assert_allclose(out, normed.sum(1) * mask, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (_model(tensors=[Tensor("w", np.zeros(2))]), "'w': dtype float64 is not written"),
        (_model(tensors=[Tensor("w", np.zeros(2, dtype=np.int32))]), "dtype int32"),
        (_model(nodes=[Node("Op", [], ["y"], {"flag": True})]), "'flag': a bool"),
        (_model(nodes=[Node("Op", [], ["y"], {"mode": "x"})]), "'mode': unsupported value"),
        (_model(nodes=[Node("Op", [], ["y"], {"i": 2**63})]), "does not fit in an int64"),
        (_model(nodes=[Node("Op", [], ["y"], {"f": 1e39})]), "'f': 1e+39 is out of the float32"),
        (_model(nodes=[Node("Op", [], ["y"], {"perm": [1, 2.0]})]), "'perm': INTS holds ints"),
        (_model(inputs=[ValueInfo("x", FLOAT, [2.0])]), "'x': a dimension is an int or a str"),
        (_model(inputs=[ValueInfo("x", FLOAT, [-(2**64)])]), "does not fit in an int64"),
    ],
)
def test_bad_input_is_refused_clearly(model, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        serialize_model(model)

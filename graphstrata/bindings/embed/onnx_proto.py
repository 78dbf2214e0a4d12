"""The ONNX model file format (protobuf wire format) for the graphs ``bert_graph`` builds.

The default embedder's model file is written without the ``onnx`` package (31 MB installed,
only needed for the ``int8`` quantization): this module encodes the few messages and fields of
``onnx.proto`` (``syntax = "proto2"``) that :mod:`graphstrata.bindings.embed.bert_graph`
uses, and nothing else:

- ``ModelProto``: ``ir_version`` (1), ``producer_name`` (2), ``graph`` (7), ``opset_import`` (8);
- ``OperatorSetIdProto``: ``domain`` (1), ``version`` (2);
- ``GraphProto``: ``node`` (1), ``name`` (2), ``initializer`` (5), ``input`` (11), ``output`` (12);
- ``NodeProto``: ``input`` (1), ``output`` (2), ``name`` (3), ``op_type`` (4), ``attribute`` (5);
- ``AttributeProto``: ``name`` (1), ``f`` (2), ``i`` (3), ``ints`` (8), ``type`` (20);
- ``TensorProto``: ``dims`` (1), ``data_type`` (2), ``name`` (8), ``raw_data`` (9), float32 and
  int64 data, little-endian;
- ``ValueInfoProto``: ``name`` (1), ``type`` (2); ``TypeProto``: ``tensor_type`` (1);
  ``TypeProto.Tensor``: ``elem_type`` (1), ``shape`` (2); ``TensorShapeProto``: ``dim`` (1);
  ``Dimension``: ``dim_value`` (1), ``dim_param`` (2).

The bytes are those of ``SerializeToString()`` of the same model built with ``onnx.helper``
(``make_model``, ``make_graph``, ``make_node``, ``make_tensor_value_info``,
``make_opsetid``) and ``onnx.numpy_helper.from_array``: fields in field-number order,
repeated scalars unpacked (proto2 without ``[packed = true]``), the fields those helpers set
written even when they hold a default (proto2 presence: an empty opset ``domain``, a
``dim_value`` of 0, an empty ``raw_data``), node attributes sorted by name as ``make_node``
sorts them. ``tests/unit/bindings/embed/test_onnx_proto.py`` checks byte equality.

Only the standard library and numpy are imported (no graphstrata module), so
``benchmarks/gpu/embed.py`` loads this file by path beside ``bert_graph.py``. Bad input
raises ``ValueError``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: ``TensorProto.DataType`` values of the tensors this module writes.
FLOAT = 1
INT64 = 7
_DATA_TYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.int64): INT64}

#: ``AttributeProto.AttributeType`` values.
_ATTR_FLOAT = 1
_ATTR_INT = 2
_ATTR_INTS = 7

_VARINT = 0
_FIXED32 = 5
_LENGTH = 2
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

#: A node attribute: ``INT`` (int), ``FLOAT`` (float) or ``INTS`` (a list or tuple of int).
AttrValue = int | float | Sequence[int]
#: Encoded pieces of a message, joined (or written) once at the end: the weights are not
#: copied for each level of nesting.
_Pieces = list[bytes | memoryview]


@dataclass(frozen=True)
class Node:
    """A ``NodeProto`` of the default domain.

    Attributes are written sorted by name, as ``onnx.helper.make_node`` writes them; an
    empty ``name`` is not written (``make_node`` without a name).
    """

    op_type: str
    inputs: Sequence[str]
    outputs: Sequence[str]
    attributes: Mapping[str, AttrValue] = field(default_factory=dict)
    name: str = ""


@dataclass(frozen=True)
class Tensor:
    """A ``TensorProto`` with ``raw_data`` (``onnx.numpy_helper.from_array``): float32 or
    int64, any shape (0-d included); an empty ``name`` is not written."""

    name: str
    array: np.ndarray


@dataclass(frozen=True)
class ValueInfo:
    """A graph input or output (``make_tensor_value_info``): ``elem_type`` (:data:`FLOAT`,
    :data:`INT64`, ...) and a shape whose dimensions are sizes (int) or symbols (str)."""

    name: str
    elem_type: int
    shape: Sequence[int | str]


@dataclass(frozen=True)
class Graph:
    """A ``GraphProto`` (``make_graph``)."""

    name: str
    nodes: Sequence[Node]
    inputs: Sequence[ValueInfo]
    outputs: Sequence[ValueInfo]
    initializers: Sequence[Tensor] = ()


@dataclass(frozen=True)
class Model:
    """A ``ModelProto`` importing one opset of the default domain (``make_model`` with
    ``opset_imports=[make_opsetid("", opset)]``, ``producer_name``, then ``ir_version``)."""

    graph: Graph
    opset: int
    ir_version: int
    producer_name: str


# --------------------------------------------------------------------------- wire format
def _varint(value: int) -> bytes:
    """Base-128 varint; a negative int64 is written as its 64-bit two's complement (10 bytes)."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{value} does not fit in an int64")
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return _varint((number << 3) | wire_type)


def _int(number: int, value: int) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"expected an int, got {value!r}")
    return _key(number, _VARINT) + _varint(int(value))


def _str(number: int, value: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"expected a str, got {value!r}")
    data = value.encode("utf-8")
    return _key(number, _LENGTH) + _varint(len(data)) + data


def _message(number: int, pieces: _Pieces) -> _Pieces:
    """``pieces`` as the length-delimited field ``number``."""
    size = sum(len(p) for p in pieces)
    return [_key(number, _LENGTH) + _varint(size), *pieces]


def _each(number: int, items: Iterable[_Pieces]) -> _Pieces:
    out: _Pieces = []
    for pieces in items:
        out += _message(number, pieces)
    return out


# --------------------------------------------------------------------------- messages
def _attribute(name: str, value: AttrValue) -> _Pieces:
    head = _str(1, name)
    if isinstance(value, bool):
        raise ValueError(f"attribute {name!r}: a bool is neither INT nor FLOAT; pass 0 or 1")
    if isinstance(value, int | np.integer):
        return [head, _int(3, int(value)), _int(20, _ATTR_INT)]
    if isinstance(value, float | np.floating):
        try:
            f = struct.pack("<f", float(value))  # rounded to float32, as protobuf stores it
        except OverflowError as exc:
            raise ValueError(f"attribute {name!r}: {value} is out of the float32 range") from exc
        return [head, _key(2, _FIXED32) + f, _int(20, _ATTR_FLOAT)]
    if isinstance(value, list | tuple):
        # Unpacked: one key per element (proto2 ``repeated int64 ints = 8``).
        try:
            ints = [_int(8, v) for v in value]
        except ValueError as exc:
            raise ValueError(f"attribute {name!r}: INTS holds ints only ({exc})") from exc
        return [head, *ints, _int(20, _ATTR_INTS)]
    raise ValueError(
        f"attribute {name!r}: unsupported value {value!r} (int, float or a list of ints)"
    )


def _node(node: Node) -> _Pieces:
    pieces: _Pieces = [_str(1, name) for name in node.inputs]
    pieces += [_str(2, name) for name in node.outputs]
    if node.name:
        pieces.append(_str(3, node.name))
    pieces.append(_str(4, node.op_type))
    pieces += _each(5, (_attribute(k, v) for k, v in sorted(node.attributes.items())))
    return pieces


def _tensor(tensor: Tensor) -> _Pieces:
    array = tensor.array
    data_type = _DATA_TYPES.get(array.dtype.newbyteorder("="))
    if data_type is None:
        raise ValueError(
            f"tensor {tensor.name!r}: dtype {array.dtype} is not written (float32, int64)"
        )
    # astype, not ascontiguousarray: that one turns a 0-d array into a 1-d one.
    data = array.astype(array.dtype.newbyteorder("<"), order="C", copy=False)
    pieces: _Pieces = [_int(1, d) for d in data.shape]
    pieces.append(_int(2, data_type))
    if tensor.name:
        pieces.append(_str(8, tensor.name))
    raw = data.reshape(-1).view(np.uint8).data  # a memoryview of the contiguous bytes, no copy
    pieces += [_key(9, _LENGTH) + _varint(len(raw)), raw]
    return pieces


def _value_info(info: ValueInfo) -> _Pieces:
    dims: _Pieces = []
    for d in info.shape:
        if isinstance(d, str):
            dims += _message(1, [_str(2, d)])
        elif isinstance(d, int | np.integer) and not isinstance(d, bool):
            dims += _message(1, [_int(1, int(d))])
        else:
            raise ValueError(f"{info.name!r}: a dimension is an int or a str, got {d!r}")
    # The shape is written even when it has no dimension (a scalar), as make_tensor_value_info
    # writes it.
    tensor_type = [_int(1, info.elem_type), *_message(2, dims)]
    return [_str(1, info.name), *_message(2, _message(1, tensor_type))]


def _graph(graph: Graph) -> _Pieces:
    pieces = _each(1, (_node(n) for n in graph.nodes))
    pieces.append(_str(2, graph.name))
    pieces += _each(5, (_tensor(t) for t in graph.initializers))
    pieces += _each(11, (_value_info(v) for v in graph.inputs))
    pieces += _each(12, (_value_info(v) for v in graph.outputs))
    return pieces


def _model(model: Model) -> _Pieces:
    opset: _Pieces = [_str(1, ""), _int(2, model.opset)]
    return [
        _int(1, model.ir_version),
        _str(2, model.producer_name),
        *_message(7, _graph(model.graph)),
        *_message(8, opset),
    ]


def serialize_model(model: Model) -> bytes:
    """The bytes of ``model`` as an ONNX file (what ``onnx.save_model`` would write).

    Raises
    ------
    ValueError
        For what the format cannot hold or this module does not write (a tensor that is not
        float32 or int64, an attribute value other than int, float or list of ints, an int
        beyond int64, a float beyond float32).
    """
    return b"".join(_model(model))


def write_model(model: Model, dest: str | Path) -> None:
    """Write :func:`serialize_model`'s bytes to ``dest``, the weights without a joined copy."""
    pieces = _model(model)
    with open(dest, "wb") as fh:
        fh.writelines(pieces)

"""Numeric Arrow columns to NumPy and back without pyarrow's pandas bridge.

pyarrow converts through its pandas compatibility layer (``Array.to_numpy``,
``ChunkedArray.to_numpy``, ``pa.array`` of a NumPy array), which imports pandas on its first
use in a process whenever pandas is installed, as it is here through the ``ray`` extra
(``ray[data]`` requires it). At load 4 that import took 1.08 s (``python -X importtime``),
and a fresh process opened a small index in 1.08 s without it against 1.42 s with it
(docs/architecture.md, "Store"). These functions read and wrap the value buffers of
null-free fixed-width columns directly (zero copy, like ``to_numpy`` of such a column) and
hand anything else to pyarrow.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["arrow_of", "numpy_of"]


def _plain(array: pa.Array) -> bool:
    """Whether ``array``'s values are one fixed-width buffer NumPy can view as is."""
    t = array.type
    return (
        array.null_count == 0
        and (pa.types.is_integer(t) or pa.types.is_floating(t))
        and not pa.types.is_boolean(t)
    )


def numpy_of(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of an integer or floating-point Arrow column as a NumPy array.

    Parameters
    ----------
    values : pyarrow.Array or pyarrow.ChunkedArray
        A column; one chunk or a plain array is viewed without a copy (read-only, as
        pyarrow's ``to_numpy`` returns it), several chunks are concatenated.

    Returns
    -------
    numpy.ndarray
        Of the column's NumPy dtype. A column with nulls or of another type is converted by
        pyarrow (``to_numpy(zero_copy_only=False)``).
    """
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks == 1:
            return numpy_of(values.chunk(0))
        if values.num_chunks == 0:
            return np.zeros(0, _dtype(values.type))
        return np.concatenate([numpy_of(c) for c in values.chunks])
    if not _plain(values):
        return values.to_numpy(zero_copy_only=False)
    dtype = _dtype(values.type)
    buf = values.buffers()[1]
    if buf is None:  # an empty array may have no value buffer
        return np.zeros(0, dtype)
    view = np.frombuffer(buf, dtype=dtype, count=len(values), offset=values.offset * dtype.itemsize)
    view.flags.writeable = False  # Arrow memory is immutable (and may be a mapped file)
    return view


def arrow_of(array: np.ndarray) -> pa.Array:
    """A one-dimensional integer, floating-point or boolean NumPy array as an Arrow array
    (no nulls): a filter mask, ``take`` positions, a column of a new segment.

    Numbers share the array's memory when it is contiguous (as ``pa.array`` shares it);
    booleans are packed into bits. Any other input is handed to ``pa.array``.
    """
    array = np.asarray(array)
    if array.ndim != 1 or array.dtype.kind not in "iufb" or array.dtype.byteorder == ">":
        return pa.array(array)
    if array.dtype.kind == "b":  # Arrow packs booleans into bits, least significant first
        bits = np.packbits(array, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(array), [None, pa.py_buffer(bits)])
    array = np.ascontiguousarray(array)
    values = pa.py_buffer(array)
    return pa.Array.from_buffers(pa.from_numpy_dtype(array.dtype), len(array), [None, values])


def _dtype(t: pa.DataType) -> np.dtype:
    return np.dtype(t.to_pandas_dtype())

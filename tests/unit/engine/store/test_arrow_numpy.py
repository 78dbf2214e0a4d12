"""``engine.store.arrow_numpy`` against pyarrow's own conversions (the oracle), and a fresh
process that opens an index and queries every mode without importing pandas."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

from graphstrata.engine.store.arrow_numpy import arrow_of, numpy_of

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
DTYPES += [np.float16, np.float32, np.float64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(3))
def test_numbers_round_trip_like_pyarrow(dtype, seed):
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal(int(rng.integers(0, 50))) * 100).astype(dtype)
    ours, theirs = arrow_of(values), pa.array(values)
    assert ours.equals(theirs)
    np.testing.assert_array_equal(numpy_of(theirs), theirs.to_numpy())
    assert numpy_of(theirs).dtype == theirs.to_numpy().dtype
    # slices start at an offset inside the buffer; chunked arrays of 0, 1 and several chunks
    if len(values) > 4:
        part = theirs.slice(2, len(values) - 3)
        np.testing.assert_array_equal(numpy_of(part), part.to_numpy())
    for chunks in ([], [theirs], [theirs.slice(0, 3), theirs.slice(3), theirs.slice(1, 2)]):
        chunked = pa.chunked_array(chunks, type=theirs.type)
        got = numpy_of(chunked)
        np.testing.assert_array_equal(got, chunked.to_numpy())
        assert got.dtype == chunked.to_numpy().dtype


def test_a_single_chunk_is_viewed_not_copied():
    values = np.arange(10, dtype=np.int64)
    array = pa.array(values)
    view = numpy_of(pa.chunked_array([array]))
    assert not view.flags.writeable
    assert np.shares_memory(view, values)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 64, 1000])
def test_boolean_masks_filter_like_pyarrow(n):
    mask = np.random.default_rng(n).random(n) < 0.4
    ours = arrow_of(mask)
    assert ours.equals(pa.array(mask))
    table = pa.table({"x": np.arange(n)})
    assert table.filter(ours).equals(table.filter(pa.array(mask)))
    np.testing.assert_array_equal(numpy_of(ours), mask)  # handed to pyarrow: bits


def test_other_columns_are_handed_to_pyarrow():
    with_nulls = pa.array([1, None, 3], pa.int64())
    np.testing.assert_array_equal(numpy_of(with_nulls), with_nulls.to_numpy(zero_copy_only=False))
    strings = pa.array(["a", "b"])
    assert numpy_of(strings).tolist() == ["a", "b"]
    assert arrow_of(np.array(["a", "b"])).equals(pa.array(np.array(["a", "b"])))
    assert arrow_of(np.arange(6).reshape(2, 3)[:, 0]).equals(pa.array([0, 3]))  # strided


def test_opening_and_querying_does_not_import_pandas(make_index, sample_docs):
    """pyarrow's pandas bridge imports pandas (1.08 s at load 4) on its first use in a process."""
    index = make_index()
    index.insert(sample_docs)
    child = textwrap.dedent(
        f"""
        import sys
        from graphstrata.bindings.api import Index
        index = Index.open({str(index.path)!r}, use_cache=False)
        for mode in index.modes:
            assert index.query("Halvorsen Observatory instruments", mode=mode).nodes, mode
        print("pandas" in sys.modules, sorted(index.modes))
        """
    )
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
    imported, modes = out.stdout.strip().split(" ", 1)
    assert imported == "False", out.stdout
    assert "graph" in modes and "collapsed" in modes

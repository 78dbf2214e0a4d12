"""``engine.store.arrow_numpy`` against pyarrow's own conversions (the oracle: ``to_numpy``,
``pa.array``, ``as_py``), and a fresh process that opens an index and queries every mode
without importing pandas."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

from graphstrata.engine.store.arrow_numpy import ColumnRows, arrow_of, numpy_of

TEXTS = ["", "a", "Meridian Optics", "é—中文 🙂", "line\nbreak", "x" * 300]


def _random_column(rng: np.random.Generator, kind: str) -> pa.ChunkedArray:
    """A column of random chunks, some of them slices (an offset into their buffers), some
    empty; ``kind``: large_string, string, list (int64), large_list, or nullable (strings
    with nulls: pyarrow reads them)."""
    chunks = []
    for _ in range(int(rng.integers(0, 5))):
        n = int(rng.integers(0, 12))
        if kind in ("string", "large_string", "nullable"):
            values = [TEXTS[int(i)] for i in rng.integers(0, len(TEXTS), n)]
            if kind == "nullable":
                values = [None if rng.random() < 0.3 else v for v in values]
            typ = pa.string() if kind == "string" else pa.large_string()
        else:
            bound = 2**40 if kind == "list" else 2**31
            lengths = rng.integers(0, 4, n).tolist()
            values = [rng.integers(-bound, bound, k).tolist() for k in lengths]
            typ = pa.list_(pa.int64()) if kind == "list" else pa.large_list(pa.int32())
        array = pa.array(values, typ)
        if n > 2 and rng.random() < 0.5:
            lo = int(rng.integers(0, n - 1))
            array = array.slice(lo, int(rng.integers(0, n - lo)))
        chunks.append(array)
    typ = {
        "string": pa.string(),
        "list": pa.list_(pa.int64()),
        "large_list": pa.large_list(pa.int32()),
    }
    return pa.chunked_array(chunks, typ.get(kind, pa.large_string()))


@pytest.mark.parametrize("kind", ["large_string", "string", "list", "large_list", "nullable"])
@pytest.mark.parametrize("seed", range(25))
def test_column_rows_read_single_rows_like_as_py(kind, seed):
    rng = np.random.default_rng(seed)
    column = _random_column(rng, kind)
    expected = column.to_pylist()
    rows = ColumnRows(column)
    assert len(rows) == len(expected)
    picks = rng.integers(0, len(expected), 20).tolist() if expected else []
    assert rows.values(picks) == [expected[i] for i in picks]
    assert rows.values(range(len(expected))) == expected
    assert rows.values([]) == []
    for bad in (-1, len(expected)):
        with pytest.raises(IndexError, match="out of range"):
            rows.values([bad])


def test_column_rows_of_a_string_chunk_without_a_data_buffer():
    # all-empty strings: pyarrow may leave the data buffer empty
    column = pa.chunked_array([pa.array(["", ""], pa.large_string()).slice(1)])
    assert ColumnRows(column).values([0]) == [""]


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

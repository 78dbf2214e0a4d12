"""core.lsh: seeded hyperplanes, blocked projection to codes, Hamming distances."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphstrata.core.lsh import (
    hamming,
    hamming_matrix,
    popcount64,
    project_codes,
    sample_hyperplanes,
)


def oracle_codes(X: np.ndarray, H: np.ndarray) -> np.ndarray:
    """numpy: (X @ H.T > 0) packed with hyperplane i as bit i (float32 product)."""
    bits = (X.astype(np.float32) @ H.astype(np.float32).T) > 0
    weights = np.uint64(1) << np.arange(H.shape[0], dtype=np.uint64)
    return (bits.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64)


def assert_codes_match(X: np.ndarray, H: np.ndarray, codes: np.ndarray) -> None:
    # Blocked and unblocked GEMMs may round differently in the last bit: a sign can only
    # differ where the projection is ~0, so compare exactly away from zero.
    proj = X.astype(np.float64) @ H.astype(np.float64).T
    ours = ((codes[:, None] >> np.arange(H.shape[0], dtype=np.uint64)) & np.uint64(1)) == 1
    clear = np.abs(proj) > 1e-4 * np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_array_equal(ours[clear], (proj > 0)[clear])


def test_hyperplanes_seeded_and_shaped() -> None:
    a = sample_hyperplanes(384, 16, seed=7)
    b = sample_hyperplanes(384, 16, seed=7)
    c = sample_hyperplanes(384, 16, seed=8)
    assert a.shape == (16, 384) and a.dtype == np.float32
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # the rows are what default_rng(seed) draws: reproducible across runs and machines
    ref = np.random.default_rng(7).standard_normal((16, 384)).astype(np.float32)
    np.testing.assert_array_equal(a, ref)


@pytest.mark.parametrize("bad", [(0, 4, 0), (8, 0, 0), (8, 65, 0), (8, 4, -1)])
def test_hyperplanes_reject_bad_arguments(bad: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError):
        sample_hyperplanes(*bad)


@pytest.mark.parametrize("n_bits", [1, 7, 16, 20, 64])
def test_project_codes_matches_numpy(n_bits: int) -> None:
    rng = np.random.default_rng(n_bits)
    X = rng.standard_normal((1000, 48)).astype(np.float32)
    H = sample_hyperplanes(48, n_bits, seed=3)
    codes = project_codes(X, H, block_rows=300)  # several blocks and a ragged tail
    assert codes.dtype == np.uint64 and codes.shape == (1000,)
    np.testing.assert_array_equal(codes, oracle_codes(X, H))
    if n_bits < 64:
        assert int(codes.max()) < (1 << n_bits)


def test_project_codes_block_size_does_not_matter() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((777, 32)).astype(np.float32)
    H = sample_hyperplanes(32, 20, seed=1)
    ref = project_codes(X, H)
    for block in (1, 2, 100, 776, 777, 10_000):
        np.testing.assert_array_equal(project_codes(X, H, block_rows=block), ref)


def test_project_codes_float16_and_float64() -> None:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((500, 24)).astype(np.float16)
    H = sample_hyperplanes(24, 12, seed=2)
    codes = project_codes(X, H, block_rows=128)
    np.testing.assert_array_equal(codes, oracle_codes(X.astype(np.float32), H))
    X64 = rng.standard_normal((200, 24))
    assert_codes_match(X64, H, project_codes(X64, H))


def test_project_codes_bit_order_and_zero_side() -> None:
    H = np.eye(3, dtype=np.float32)
    X = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1], [-1, 0, 0], [0, 0, 0]], np.float32)
    # bit i <-> hyperplane i; an exact zero projection is the negative side
    np.testing.assert_array_equal(project_codes(X, H), np.array([1, 2, 4, 7, 0, 0], np.uint64))


def test_project_codes_non_contiguous_input() -> None:
    rng = np.random.default_rng(2)
    big = rng.standard_normal((400, 64)).astype(np.float32)
    X = big[::2, ::2]  # strided view
    H = sample_hyperplanes(32, 10, seed=0)
    np.testing.assert_array_equal(project_codes(X, H, block_rows=64), oracle_codes(X, H))


def test_project_codes_empty_and_single() -> None:
    H = sample_hyperplanes(8, 4, seed=0)
    assert project_codes(np.zeros((0, 8), np.float32), H).shape == (0,)
    x = np.ones((1, 8), np.float32)
    np.testing.assert_array_equal(project_codes(x, H), oracle_codes(x, H))


@pytest.mark.parametrize(
    ("X", "H"),
    [
        (np.zeros((3, 4), np.float32), np.zeros((2, 5), np.float32)),  # dim mismatch
        (np.zeros(4, np.float32), np.zeros((2, 4), np.float32)),  # X not 2-d
        (np.zeros((3, 4), np.int32), np.zeros((2, 4), np.float32)),  # X not float
        (np.zeros((3, 4), np.float32), np.zeros((65, 4), np.float32)),  # > 64 bits
        (np.zeros((3, 4), np.float32), np.zeros((0, 4), np.float32)),  # 0 bits
    ],
)
def test_project_codes_rejects_bad_shapes(X: np.ndarray, H: np.ndarray) -> None:
    with pytest.raises(ValueError):
        project_codes(X, H)


def test_project_codes_rejects_bad_block() -> None:
    with pytest.raises(ValueError):
        project_codes(np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32), block_rows=0)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 64),
    st.integers(1, 40),
    st.integers(0, 60),
    st.integers(1, 50),
    st.integers(0, 2**31),
)
def test_project_codes_property(n_bits: int, dim: int, m: int, block: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, dim)).astype(np.float32)
    H = sample_hyperplanes(dim, n_bits, seed)
    codes = project_codes(X, H, block_rows=block)
    assert codes.shape == (m,)
    assert_codes_match(X, H, codes)


def test_hamming_helpers() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0b1011, 0b0001) == 2
    assert hamming(np.uint64(2**64 - 1), np.uint64(0)) == 64
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**63, 40, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.integers(0, 2**63, 30, dtype=np.uint64)
    D = hamming_matrix(a, b)
    assert D.shape == (40, 30) and D.dtype == np.uint8
    ref = np.array([[bin(int(x) ^ int(y)).count("1") for y in b] for x in a])
    np.testing.assert_array_equal(D, ref)
    np.testing.assert_array_equal(popcount64(a), [bin(int(x)).count("1") for x in a])
    assert hamming_matrix(a[:0], b).shape == (0, 30)
    with pytest.raises(ValueError):
        hamming_matrix(np.array([-1]), b)

"""Random-hyperplane LSH: seeded hyperplanes, blocked projection to uint64 codes, Hamming.

Bit ``i`` of a code is set when the item lies on the positive side of hyperplane ``i``
(``x . H[i] > 0``; an exact zero counts as the negative side). Hyperplane 0 is the least
significant bit, so ``code == sum(((X @ H.T) > 0) << arange(n_bits))``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = [
    "hamming",
    "hamming_matrix",
    "popcount64",
    "project_codes",
    "sample_hyperplanes",
]

_MAX_BITS = 64


def sample_hyperplanes(dim: int, n_bits: int, seed: int) -> np.ndarray:
    """Draw ``n_bits`` random hyperplanes (their normals) for dimension ``dim``.

    The rows are i.i.d. standard gaussian vectors from ``np.random.default_rng(seed)``, so the
    same ``(dim, n_bits, seed)`` gives the same hyperplanes on every machine and run. The
    index stores them (or the seed) so that all layers and all later inserts hash with the
    same set.

    Parameters
    ----------
    dim : int
        Embedding dimension (>= 1).
    n_bits : int
        Number of hyperplanes, 1..64 (codes are uint64).
    seed : int
        Seed of the generator (>= 0).

    Returns
    -------
    float32 array [n_bits, dim]
    """
    dim = int(dim)
    n_bits = int(n_bits)
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    if not 1 <= n_bits <= _MAX_BITS:
        raise ValueError(f"n_bits must be in 1..64, got {n_bits}")
    if int(seed) < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    rng = np.random.default_rng(int(seed))
    # Drawn in float64 then rounded: the float32 values do not depend on numpy's float32
    # gaussian path, which has changed between versions.
    return rng.standard_normal((n_bits, dim)).astype(np.float32)


@njit(cache=True, nogil=True)
def _pack_signs(proj: np.ndarray, out: np.ndarray) -> None:
    # proj: float32 [b, n_bits] (C order). One pass, no temporaries: bit j = proj[i, j] > 0.
    # Serial on purpose: the pass costs ~1% of the GEMM, and a Numba thread pool woken
    # between two BLAS calls fights OpenBLAS's spinning threads for the same cores.
    b, n_bits = proj.shape
    for i in range(b):
        code = np.uint64(0)
        for j in range(n_bits):
            if proj[i, j] > np.float32(0.0):
                code |= np.uint64(1) << np.uint64(j)
        out[i] = code


def project_codes(X: np.ndarray, H: np.ndarray, block_rows: int = 65536) -> np.ndarray:
    """Hash rows of ``X`` to uint64 codes by the signs of their projections on ``H``.

    Rows are processed in blocks of ``block_rows``: per block one float32 GEMM
    (``X_block @ H.T`` through BLAS into a reused buffer) and one Numba pass that packs the
    signs, so extra memory is ``block_rows * (n_bits * 4 [+ dim * 4 for float16 input])``
    bytes whatever ``m`` is.

    Parameters
    ----------
    X : float32 or float16 array [m, dim]
        Embeddings (float16 is upcast block by block; float64 is rounded to float32).
    H : float array [n_bits, dim]
        Hyperplanes from :func:`sample_hyperplanes`; 1 <= n_bits <= 64.
    block_rows : int
        Rows per block (>= 1).

    Returns
    -------
    uint64 array [m]
        Bit ``i`` set when ``X[r] . H[i] > 0``.
    """
    X = np.asarray(X)
    H = np.asarray(H)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d [m, dim], got shape {X.shape}")
    if H.ndim != 2:
        raise ValueError(f"H must be 2-d [n_bits, dim], got shape {H.shape}")
    if X.dtype not in (np.float32, np.float16, np.float64):
        raise ValueError(f"X must be float32 or float16, got {X.dtype}")
    if not np.issubdtype(H.dtype, np.floating):
        raise ValueError(f"H must be a float array, got {H.dtype}")
    n_bits, dim = H.shape
    if not 1 <= n_bits <= _MAX_BITS:
        raise ValueError(f"H must have 1..64 rows (bits), got {n_bits}")
    if X.shape[1] != dim:
        raise ValueError(f"X has dimension {X.shape[1]} but H has dimension {dim}")
    block_rows = int(block_rows)
    if block_rows < 1:
        raise ValueError(f"block_rows must be >= 1, got {block_rows}")
    m = X.shape[0]
    codes = np.empty(m, dtype=np.uint64)
    if m == 0:
        return codes
    # H.T as a C-contiguous [dim, n_bits] float32 matrix: BLAS sees a plain sgemm.
    HT = np.ascontiguousarray(H.T, dtype=np.float32)
    b = min(block_rows, m)
    buf = np.empty((b, n_bits), dtype=np.float32)
    for start in range(0, m, b):
        stop = min(start + b, m)
        xb = X[start:stop]
        if xb.dtype != np.float32:
            xb = xb.astype(np.float32)
        out = buf[: stop - start]
        np.matmul(xb, HT, out=out)
        _pack_signs(out, codes[start:stop])
    return codes


def popcount64(x: np.ndarray) -> np.ndarray:
    """Number of set bits of each element of a uint64 array (vectorized, any shape).

    Parameters
    ----------
    x : uint64 array, any shape
        Codes (other integer dtypes are converted to uint64).

    Returns
    -------
    int64 array, same shape
    """
    x = np.asarray(x, dtype=np.uint64)
    return np.bitwise_count(x).astype(np.int64)


def hamming(a: int | np.integer, b: int | np.integer) -> int:
    """Hamming distance between two codes (number of differing bits).

    Parameters
    ----------
    a, b : int
        Non-negative codes.

    Returns
    -------
    int
    """
    return (int(a) ^ int(b)).bit_count()


@njit(cache=True, nogil=True, inline="always")
def _popcount(x: np.uint64) -> np.int64:
    # SWAR popcount: Numba has no portable popcnt intrinsic for uint64 scalars.
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, nogil=True, parallel=True)
def _hamming_matrix(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    for i in prange(a.shape[0]):
        ai = a[i]
        for j in range(b.shape[0]):
            out[i, j] = np.uint8(_popcount(ai ^ b[j]))


def hamming_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """All pairwise Hamming distances between two code arrays.

    Parameters
    ----------
    a : uint64 array [m]
    b : uint64 array [n]

    Returns
    -------
    uint8 array [m, n]
        ``out[i, j] = popcount(a[i] ^ b[j])`` (at most 64, so uint8 suffices).
    """
    a = _as_codes(a, "a")
    b = _as_codes(b, "b")
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.uint8)
    if out.size:
        _hamming_matrix(a, b, out)
    return out


def _as_codes(codes: np.ndarray, name: str) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.ndim != 1:
        raise ValueError(f"{name} must be a 1-d code array, got shape {codes.shape}")
    if codes.dtype != np.uint64:
        if not np.issubdtype(codes.dtype, np.integer) or (codes.size and codes.min() < 0):
            raise ValueError(f"{name} must hold uint64 codes, got {codes.dtype}")
        codes = codes.astype(np.uint64)
    return np.ascontiguousarray(codes)

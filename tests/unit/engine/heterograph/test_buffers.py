"""``heterograph.buffers.BufferPool``: a map is reused only once no array or view of it is
left, small arrays are not pooled, and the pool stays bounded."""

from __future__ import annotations

import gc

import numpy as np

from graphstrata.engine.heterograph.state.buffers import MIN_POOLED_BYTES, BufferPool

N = MIN_POOLED_BYTES // 8 + 10  # int64 items of a pooled array


def test_a_released_map_is_reused_and_a_held_view_keeps_it():
    pool = BufferPool()
    a = pool.empty(N, np.int64)
    a[:] = 7
    view = a[5:10]
    addr = a.__array_interface__["data"][0]
    del a
    gc.collect()
    assert pool.free_maps() == 0  # the view still reads it
    b = pool.empty(N, np.int64)
    assert b.__array_interface__["data"][0] != addr
    assert view.tolist() == [7] * 5
    del view
    gc.collect()
    assert pool.free_maps() == 1
    c = pool.empty(N - 3, np.int64)  # fits the released map: reused
    assert c.__array_interface__["data"][0] == addr and pool.free_maps() == 0
    assert c.flags.writeable and c.shape == (N - 3,) and b.dtype == np.int64


def test_small_arrays_are_not_pooled_and_the_pool_is_bounded():
    pool = BufferPool(max_free=2)
    small = pool.empty(10, np.float32)
    assert small.base is None and small.dtype == np.float32
    arrays = [pool.empty(N * (i + 1), np.int64) for i in range(4)]
    del arrays
    gc.collect()
    assert pool.free_maps() == 2
    # An array much smaller than every free map gets a map of its own.
    tiny = pool.empty(MIN_POOLED_BYTES // 8, np.int64)
    assert pool.free_maps() == 2 and tiny.size == MIN_POOLED_BYTES // 8

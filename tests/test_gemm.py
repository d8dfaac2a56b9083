"""flowbook.gemm's split of large products: its decisions and its results, without timing."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowbook as fb
from flowbook import gemm
from flowbook.run import blas, pool

RNG = np.random.default_rng(0)


@pytest.fixture
def two_ways(monkeypatch):
    """The policy on with two bands; restored after the test."""
    monkeypatch.setattr(gemm, "_busy", 0)
    ways = gemm._ways
    gemm.configure(2)
    yield
    gemm.configure(ways)


@pytest.mark.parametrize(
    "m, k, n, want",
    [
        (12544, 800, 64, True),  # conv2 forward
        (800, 12544, 64, True),  # conv2 filter gradient
        (25, 50176, 32, False),  # conv1 filter gradient: 80 MFLOP, a 25x32 result
        (50176, 25, 32, False),  # conv1 forward: a 32-wide result
        (12544, 64, 32, False),  # one tap of an input gradient: 51 MFLOP, 32 wide
        (64, 6272, 10, False),  # the dense layer
        (200, 1000, 128, True),  # just over 50 MFLOP
        (190, 1000, 128, False),  # just under
    ],
)
def test_wide_needs_size_and_both_sides(m, k, n, want):
    assert gemm.wide(m, k, n) is want


@pytest.mark.parametrize("ways", [2, 3])
@pytest.mark.parametrize(
    "a_shape, b_shape, transposed",
    [
        ((12544, 800), (800, 64), False),
        ((800, 12544), (12544, 64), True),
        ((401, 999), (999, 77), False),
    ],
)
def test_split_is_bit_identical(monkeypatch, ways, a_shape, b_shape, transposed):
    monkeypatch.setattr(gemm, "_busy", 0)
    a = RNG.standard_normal(a_shape[::-1] if transposed else a_shape).astype(np.float32)
    a = a.T if transposed else a  # the filter gradient's patches.T: a transposed view
    b = RNG.standard_normal(b_shape).astype(np.float32)
    before = gemm._ways
    gemm.configure(ways)
    try:
        assert gemm.splits(a, b)
        got = gemm.matmul(a, b)
    finally:
        gemm.configure(before)
    np.testing.assert_array_equal(got, a @ b)
    assert got.dtype == np.float32 and gemm._busy == 0


def test_no_split_while_a_pool_task_is_in_flight(two_ways):
    a, b = np.ones((12544, 800), np.float32), np.ones((800, 64), np.float32)
    release = threading.Event()
    future = pool.pool().submit(release.wait, 10)
    try:
        assert gemm._busy == 1 and not gemm.splits(a, b)
    finally:
        release.set()
        future.result()
    assert gemm._busy == 0 and gemm.splits(a, b)


@pytest.mark.parametrize(
    "a, b",
    [
        (np.ones((50, 25)), np.ones((25, 32))),  # small
        (np.ones((12544, 800)), np.ones((800, 64))[None]),  # not 2-D
        (np.ones((12544, 800)).tolist(), np.ones((800, 64))),  # not an ndarray
    ],
    ids=["small", "3-d", "list"],
)
def test_no_split_of_other_products(two_ways, a, b):
    assert not gemm.splits(a, b)


def test_no_split_when_off(monkeypatch):
    monkeypatch.setattr(gemm, "_busy", 0)
    before = gemm._ways
    gemm.configure(1)
    try:
        assert not gemm.splits(np.ones((12544, 800)), np.ones((800, 64)))
    finally:
        gemm.configure(before)


def test_sessions_turn_the_split_on_only_by_default(monkeypatch):
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    for field in ("_applied", "_modules"):
        monkeypatch.setattr(blas, field, getattr(blas, field))
    monkeypatch.setattr(blas, "_cpus", lambda: 2)
    before = gemm._ways
    try:
        fb.Session().close()  # a small machine by default: one BLAS thread, large products split
        assert gemm._ways == 2
        fb.Session(config=fb.ConfigProto(intra_op_parallelism_threads=1)).close()
        assert gemm._ways == 1  # the user's count: no split
        fb.Session().close()
        assert gemm._ways == 2
        monkeypatch.setattr(blas, "_cpus", lambda: 64)
        fb.Session().close()  # a big machine keeps BLAS's own threads: no split
        assert gemm._ways == 1
    finally:
        monkeypatch.setattr(blas, "_cpus", lambda: 2)
        fb.Session().close()
        gemm.configure(before)

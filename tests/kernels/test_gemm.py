"""flowbook.kernels.gemm's split of large products: its decisions and its results, without timing."""

from __future__ import annotations

import threading
import time
from itertools import pairwise

import numpy as np
import pytest

import flowbook as fb
from flowbook.kernels import gemm
from flowbook.runtime import blas, pool
from tests.waits import wait_until

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


@pytest.fixture
def one_blas_thread():
    """BLAS on one thread while the test runs, as ``flowbook.runtime.blas`` sets it when the split
    policy is on: every band, and every reference, is the same one-thread BLAS call."""
    import threadpoolctl

    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        yield


def _bands_one_by_one(a, b, ways):
    """The bands of a split product, each its own BLAS call, one after another on this thread."""
    edges = [a.shape[0] * i // ways for i in range(ways + 1)]
    return np.concatenate([a[lo:hi] @ b for lo, hi in pairwise(edges)])


@pytest.mark.parametrize("ways", [2, 3])
@pytest.mark.parametrize(
    "a_shape, b_shape, transposed",
    [
        ((12544, 800), (800, 64), False),
        ((800, 12544), (12544, 64), True),
        ((401, 999), (999, 77), False),
    ],
)
def test_a_split_has_the_same_bits_under_any_load(
    monkeypatch, one_blas_thread, ways, a_shape, b_shape, transposed
):
    """The bands are cut by shape and ways alone: helpers free or busy, the same bits, which
    are those of the bands computed one by one (whether they equal one whole call's bits in
    the last place is the BLAS kernel's business; within float32 rounding they do)."""
    monkeypatch.setattr(gemm, "_busy", 0)
    a = RNG.standard_normal(a_shape[::-1] if transposed else a_shape).astype(np.float32)
    a = a.T if transposed else a  # the filter gradient's patches.T: a transposed view
    b = RNG.standard_normal(b_shape).astype(np.float32)
    before = gemm._ways
    gemm.configure(ways)
    try:
        assert gemm.splits(a, b)
        shared = gemm.matmul(a, b)  # the helpers free: bands on both cores
        monkeypatch.setattr(gemm, "_busy", 1)  # a pool task in flight: the caller runs them all
        by_caller = gemm.matmul(a, b)
        assert gemm._busy == 1
    finally:
        gemm.configure(before)
    assert shared.dtype == by_caller.dtype == np.float32
    assert shared.tobytes() == by_caller.tobytes()
    assert shared.tobytes() == _bands_one_by_one(a, b, ways).tobytes()
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)  # each sum's size
    assert np.all(np.abs(shared - exact) <= 1e-6 * scale)  # float32 rounding, k terms summed


def test_a_pool_task_in_flight_keeps_the_bands_on_the_caller(two_ways):
    a, b = np.ones((12544, 800), np.float32), np.ones((800, 64), np.float32)
    release = threading.Event()
    future = pool.pool().submit(release.wait, 10)
    threads = set()
    real = np.matmul

    def matmul(x, y, out=None):
        threads.add(threading.get_ident())
        return real(x, y, out=out)

    try:
        assert gemm._busy == 1 and gemm.splits(a, b)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(np, "matmul", matmul)
            assert (gemm.matmul(a, b) == 800.0).all()
    finally:
        release.set()
        future.result()
    assert threads == {threading.get_ident()}
    wait_until(lambda: gemm._busy == 0, "the pool task's done-callback (after result())")


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


@pytest.mark.parametrize("n, ways, pieces", [(1, 2, 0), (2, 2, 0), (7, 3, 0), (64, 2, 8)])
def test_bands_cover_the_range_once_and_helpers_take_some(monkeypatch, n, ways, pieces):
    monkeypatch.setattr(gemm, "_busy", 0)
    before = gemm._ways
    gemm.configure(ways)
    seen, threads, lock = [], set(), threading.Lock()
    second = threading.Event()  # a second band was taken while the first one still ran

    def body(lo, hi):
        with lock:
            first = not seen
            seen.append((lo, hi))
            threads.add(threading.get_ident())
        if first and n > 1:  # hold the first band until another thread takes one
            second.wait(30)
        else:
            second.set()

    try:
        gemm.in_bands(n, body, pieces)
    finally:
        gemm.configure(before)
    seen.sort()
    assert seen[0][0] == 0 and seen[-1][1] == n and len(seen) == min(n, pieces or ways)
    assert all(a[1] == b[0] for a, b in pairwise(seen))
    assert len(threads) == 1 if n == 1 else len(threads) >= 2  # side by side


def test_the_caller_takes_every_band_a_helper_is_too_busy_to_take(monkeypatch):
    """Work-sharing: with the only helper held elsewhere, the caller runs every band itself."""
    before = gemm._ways
    gemm.configure(2)
    release, threads = threading.Event(), set()
    try:
        gemm.in_bands(2, lambda lo, hi: None)  # makes the helper thread
        gemm._helpers.submit(release.wait, 10)  # ... and keeps it busy
        gemm.in_bands(8, lambda lo, hi: threads.add(threading.get_ident()), 8)
    finally:
        release.set()
        gemm.configure(before)
    assert threads == {threading.get_ident()}


def test_a_band_s_error_reaches_the_caller_after_every_band(two_ways):
    done = []

    def body(lo, hi):
        time.sleep(0.01)
        done.append(lo)
        if lo == 2:
            raise ValueError("band")

    with pytest.raises(ValueError, match="band"):
        gemm.in_bands(8, body, 8)
    assert sorted(done) == list(range(8)) and gemm._busy == 0


POOLS = [  # ksize, strides, padding, shape: each at least pool_kernels.BAND_BYTES
    ((1, 2, 2, 1), (1, 2, 2, 1), "VALID", (32, 28, 28, 32)),  # tiles the input: the CNN's
    ((1, 2, 2, 1), (1, 3, 3, 1), "VALID", (32, 29, 29, 32)),  # disjoint, cells left over
    ((1, 3, 3, 1), (1, 2, 2, 1), "SAME", (32, 29, 29, 32)),  # overlapping, padded
]


@pytest.mark.parametrize("ksize, strides, padding, shape", POOLS)
def test_pools_in_batch_bands_are_bit_identical(monkeypatch, ksize, strides, padding, shape):
    from flowbook.framework.registry import OPS
    from flowbook.kernels import pool_kernels

    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    x = np.maximum(RNG.standard_normal(shape).astype(np.float32), 0)
    x[0, 3, 3, 3] = np.nan
    y = OPS["MaxPool"].kernel(np, x, **attrs)
    grad = RNG.standard_normal(y.shape).astype(np.float32)
    grad[1, 1, 1, :3] = [np.inf, -0.0, np.nan]
    fused = OPS["_FusedMaxPoolGrad"].bound_kernel(np, {**attrs, "fused_ops": ["ReluGrad"]})

    def run():
        with np.errstate(all="ignore"):
            return [
                OPS["MaxPool"].kernel(np, x, **attrs),
                OPS["AvgPool"].kernel(np, x, **attrs),
                OPS["MaxPoolGrad"].kernel(np, x, y, grad, **attrs),
                fused(x, y, grad),
            ]

    monkeypatch.setattr(gemm, "_busy", 0)
    before = gemm._ways
    bands = []
    real = pool_kernels.in_bands
    monkeypatch.setattr(
        pool_kernels, "in_bands", lambda n, body, k=0: (bands.append(n), real(n, body, k))
    )
    try:
        gemm.configure(1)
        serial = run()
        gemm.configure(2)
        banded = run()
    finally:
        gemm.configure(before)
    assert len(bands) == 4  # each of the four kernels asked for bands with the policy on
    for a, b in zip(serial, banded):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


class _TakenElsewhere:
    """Stands in for gemm's helper threads when every one is busy: it takes no band."""

    def submit(self, fn, *args):
        return None

    def shutdown(self, wait=True):
        pass


def _three_ways(monkeypatch, compute):
    """``compute()`` with the policy off (one whole call), with its bands shared with the
    helpers, and with every band run by the caller (the helpers busy elsewhere)."""
    before = gemm._ways
    try:
        gemm.configure(1)
        whole = compute()
        gemm.configure(2)
        shared = compute()
        monkeypatch.setattr(gemm, "_helpers", _TakenElsewhere())
        by_caller = compute()
    finally:
        monkeypatch.setattr(gemm, "_helpers", None)
        gemm.configure(before)
    return whole, shared, by_caller


def _close_to_whole(banded, whole, scale):
    """Within float32 rounding of the whole product: each sum off by at most ~k ulps of its size."""
    assert banded.dtype == whole.dtype and banded.shape == whole.shape
    assert np.all(np.abs(banded - whole) <= 1e-5 * scale)


@pytest.mark.parametrize(
    "x_shape, f_shape, padding",
    [
        ((64, 28, 28, 1), (5, 5, 1, 32), "SAME"),
        ((64, 14, 14, 32), (5, 5, 32, 64), "SAME"),
        ((48, 30, 30, 3), (3, 3, 3, 40), "VALID"),
    ],
)
def test_convs_in_bands_have_the_same_bits_under_any_load_with_their_fused_tails(
    monkeypatch, one_blas_thread, x_shape, f_shape, padding
):
    """Conv2D and the fused conv's bias+ReLU, band by band (conv_patches.conv_gemm): the same
    bits whether the helpers take bands or the caller runs them all, the same patch matrix
    (lent to the filter gradient) as the whole product, and its values within rounding."""
    from flowbook.framework.registry import OPS
    from flowbook.kernels import conv_patches

    attrs = {"strides": (1, 1, 1, 1), "padding": padding}
    x = RNG.standard_normal(x_shape).astype(np.float32)
    f = RNG.standard_normal(f_shape).astype(np.float32)
    b = RNG.standard_normal(f_shape[3]).astype(np.float32)
    fused = OPS["_FusedConv2D"].bound_kernel(np, {**attrs, "fused_ops": ["BiasAdd", "Relu"]})
    monkeypatch.setattr(gemm, "_busy", 0)
    bands = []
    real = gemm.in_bands
    monkeypatch.setattr(gemm, "in_bands", lambda n, body, k=0: (bands.append(k), real(n, body, k)))

    def conv():
        conv_patches.CACHE.clear()
        out = OPS["Conv2D"].kernel(np, x, f, **attrs)
        cols = conv_patches.CACHE.take(np, x, next(iter(conv_patches.CACHE.entries))[1])
        return out, fused(x, f, b), cols

    try:
        whole, shared, by_caller = _three_ways(monkeypatch, conv)
    finally:
        conv_patches.CACHE.clear()
    assert bands  # banded: the product (wide ones) or the tail, or both with the patches
    if x_shape[3] <= conv_patches.TAP_ROWS_MAX_CHANNELS:
        assert all(k % 2 == 0 for k in bands)  # a multiple of the two CPUs
    (out, fused_out, cols), (out1, _, cols1) = shared, whole
    assert all(a.tobytes() == c.tobytes() for a, c in zip(shared, by_caller))
    assert np.array_equal(cols, cols1)
    assert fused_out.tobytes() == np.maximum(out + b, 0).tobytes()
    scale = np.abs(cols).astype(np.float64) @ np.abs(f).reshape(-1, f_shape[3])
    _close_to_whole(out, out1, scale.reshape(out.shape))


@pytest.mark.parametrize(
    "x_shape, f_shape, strides, padding",
    [
        ((64, 14, 14, 32), (5, 5, 32, 64), (1, 1, 1, 1), "SAME"),
        ((64, 33, 33, 8), (3, 3, 8, 64), (1, 2, 2, 1), "VALID"),
    ],
)
def test_a_conv_input_gradient_in_bands_has_the_same_bits_under_any_load(
    monkeypatch, one_blas_thread, x_shape, f_shape, strides, padding
):
    from flowbook.framework.registry import OPS
    from flowbook.ops.nn import conv_ops

    f = RNG.standard_normal(f_shape).astype(np.float32)
    y = OPS["Conv2D"].kernel(np, np.ones(x_shape, np.float32), f, strides=strides, padding=padding)
    dy = RNG.standard_normal(y.shape).astype(np.float32)
    sizes = np.array(x_shape, np.int32)
    monkeypatch.setattr(gemm, "_busy", 0)
    bands = []
    real = conv_ops.gemm.in_bands
    monkeypatch.setattr(gemm, "in_bands", lambda n, body, k=0: (bands.append(n), real(n, body, k)))
    grad = lambda: OPS["Conv2DBackpropInput"].kernel(
        np, sizes, f, dy, strides=strides, padding=padding
    )
    whole, shared, by_caller = _three_ways(monkeypatch, grad)
    assert bands == [x_shape[0]] * 2 and whole.shape == x_shape
    assert shared.dtype == by_caller.dtype and shared.tobytes() == by_caller.tobytes()
    scale = OPS["Conv2DBackpropInput"].kernel(  # each sum's size: |dy| through |f|
        np, sizes, np.abs(f), np.abs(dy), strides=strides, padding=padding
    )
    _close_to_whole(shared, whole, scale.astype(np.float64))

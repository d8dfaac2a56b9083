"""Conv2D with dilations, the patch matrix lent to the filter gradient, and the pool fast paths.

The convolutions (forward and both backprops) are checked against a loop
reference that walks every output cell and tap, over a table of shapes,
strides, dilations and paddings (odd sizes, SAME with uneven splits) and over
random ones (hypothesis), then against finite differences
(``flowbook.autodiff.gradient_checker``).  The patch cache must never answer for an
input that changed: in place, at a reused id, or past its budget.  The pools'
disjoint-window path, NaN windows and wide windows (32-bit codes) against the
same kind of loop reference.
"""

from __future__ import annotations

import itertools
import platform

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error
from flowbook.framework.registry import OPS
from flowbook.kernels import conv_patches
from flowbook.kernels.windows import out_size
from flowbook.runtime import heap
from flowbook.runtime.gpu_sim import simulate_gpu

RNG = np.random.default_rng(7)


def ref_conv(x, f, s, d, padding, dy):
    """(Conv2D, input gradient, filter gradient) by loops over output cells and taps."""
    k = f.shape[:2]
    span = [(k[a] - 1) * d[a] + 1 for a in (0, 1)]
    (oh, top, _), (ow, left, _) = (
        out_size(x.shape[1], span[0], s[0], padding),
        out_size(x.shape[2], span[1], s[1], padding),
    )
    y = np.zeros((x.shape[0], oh, ow, f.shape[3]))
    dx, df = np.zeros(x.shape), np.zeros(f.shape)
    for r, c, i, j in itertools.product(range(oh), range(ow), range(k[0]), range(k[1])):
        yy, xx = r * s[0] - top + i * d[0], c * s[1] - left + j * d[1]
        if 0 <= yy < x.shape[1] and 0 <= xx < x.shape[2]:
            y[:, r, c] += x[:, yy, xx] @ f[i, j]
            dx[:, yy, xx] += dy[:, r, c] @ f[i, j].T
            df[i, j] += x[:, yy, xx].T @ dy[:, r, c]
    return y, dx, df


def kernels(x, f, s, d, padding, dy, lend=True):
    attrs = {"strides": (1, *s, 1), "padding": padding, "dilations": (1, *d, 1)}
    y = OPS["Conv2D"].kernel(np, x, f, **attrs)
    if not lend:
        conv_patches.CACHE.clear()
    dx = OPS["Conv2DBackpropInput"].kernel(np, np.array(x.shape), f, dy, **attrs)
    df = OPS["Conv2DBackpropFilter"].kernel(np, x, np.array(f.shape), dy, **attrs)
    return y, dx, df


def check(shape, k, s, d, padding, cout=3, dtype=np.float64):
    x = RNG.standard_normal(shape).astype(dtype)
    f = RNG.standard_normal((*k, shape[3], cout)).astype(dtype)
    oh = out_size(shape[1], (k[0] - 1) * d[0] + 1, s[0], padding)[0]
    ow = out_size(shape[2], (k[1] - 1) * d[1] + 1, s[1], padding)[0]
    dy = RNG.standard_normal((shape[0], oh, ow, cout)).astype(dtype)
    want = ref_conv(x.astype(np.float64), f.astype(np.float64), s, d, padding, dy)
    tol = 1e-10 if dtype == np.float64 else 1e-4
    for lend in (True, False):  # the forward's patches, and rebuilt
        got = kernels(x, f, s, d, padding, dy, lend)
        for name, a, b in zip(("Conv2D", "input grad", "filter grad"), got, want):
            assert a.dtype == dtype, name  # no upcast
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=f"{name}, lend={lend}")


CONVS = [  # (input, kernel, strides, dilations): odd sizes, uneven SAME splits, C = 1, 2, 3
    ((2, 7, 6, 1), (3, 3), (1, 1), (2, 2)),
    ((1, 9, 8, 3), (3, 2), (2, 1), (2, 3)),
    ((2, 8, 7, 2), (2, 3), (2, 2), (1, 2)),
    ((1, 10, 9, 4), (3, 3), (3, 2), (3, 1)),
    ((2, 6, 5, 1), (5, 5), (1, 1), (1, 1)),  # the CNN's first conv, small
    ((1, 5, 5, 3), (1, 1), (2, 2), (1, 1)),
]


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize(
    "shape,k,s,d", CONVS, ids=[f"{c[0]}-k{c[1]}-s{c[2]}-d{c[3]}" for c in CONVS]
)
def test_dilated_convolutions_match_the_loop_reference(shape, k, s, d, padding):
    span = [(k[a] - 1) * d[a] + 1 for a in (0, 1)]
    if padding == "VALID" and (shape[1] < span[0] or shape[2] < span[1]):
        pytest.skip("no window fits")
    check(shape, k, s, d, padding)


def test_float32_stays_float32():
    check((2, 9, 9, 1), (5, 5), (1, 1), (1, 1), "SAME", cout=4, dtype=np.float32)
    check((2, 7, 7, 5), (3, 3), (1, 1), (2, 2), "SAME", cout=4, dtype=np.float32)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(1, 2),
    h=st.integers(1, 9),
    w=st.integers(1, 9),
    c=st.integers(1, 4),
    k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    s=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    d=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from(["SAME", "VALID"]),
)
def test_random_dilated_convolutions_match_the_loop_reference(n, h, w, c, k, s, d, padding):
    span = [(k[a] - 1) * d[a] + 1 for a in (0, 1)]
    if padding == "VALID" and (h < span[0] or w < span[1]):
        return
    check((n, h, w, c), k, s, d, padding, cout=2)


@pytest.mark.parametrize("wrt", [0, 1])
@pytest.mark.parametrize("padding,s,d", [("SAME", 1, 2), ("VALID", 1, 2), ("SAME", 2, 1)])
def test_dilated_conv_gradients_match_finite_differences(wrt, padding, s, d):
    shapes = [(2, 7, 6, 2), (2, 3, 2, 3)]
    values = [RNG.standard_normal(sh) for sh in shapes]
    with fb.Graph().as_default():
        phs = [fb.placeholder(fb.float64, sh) for sh in shapes]
        y = fb.nn.conv2d(phs[0], phs[1], [1, s, s, 1], padding, dilations=[1, d, d, 1])
        err = compute_gradient_error(
            phs[wrt],
            shapes[wrt],
            y,
            y.shape.as_list(),
            values[wrt],
            extra_feed_dict={phs[1 - wrt]: values[1 - wrt]},
        )
    assert err < 1e-6


def test_dilated_conv_static_shape():
    with fb.Graph().as_default():
        x = fb.placeholder(fb.float32, [None, 9, 9, 2])
        y = fb.nn.conv2d(x, fb.zeros([3, 3, 2, 4]), 1, "VALID", dilations=[1, 2, 3, 1])
        assert y.shape.as_list() == [None, 5, 3, 4]


# ------------------------------------------------------------ the patch cache
def _grad_filter(x, f_shape, dy):
    attrs = {"strides": (1, 1, 1, 1), "padding": "SAME"}
    return OPS["Conv2DBackpropFilter"].kernel(np, x, np.array(f_shape), dy, **attrs)


def _forward(x, f):
    return OPS["Conv2D"].kernel(np, x, f, strides=(1, 1, 1, 1), padding="SAME")


@pytest.mark.parametrize("c", [1, 3])  # both layouts of the matrix
def test_a_changed_input_never_gets_the_lent_patches(c):
    x = RNG.standard_normal((2, 6, 6, c))
    f = RNG.standard_normal((3, 3, c, 2))
    dy = RNG.standard_normal((2, 6, 6, 2))
    _forward(x, f)
    x[0, 2, 3, 0] += 1.0  # in place, after the forward lent its patches
    want = ref_conv(x, f, (1, 1), (1, 1), "SAME", dy)[2]
    np.testing.assert_allclose(_grad_filter(x, f.shape, dy), want, rtol=1e-10, atol=1e-10)


def test_even_a_zero_s_sign_counts():
    cache = conv_patches.PatchCache(1 << 20)
    x = np.zeros((1, 2, 2, 1))
    cache.put(np, x, "g", np.ones((4, 1)))
    x[0, 0, 0, 0] = -0.0  # equal as a number, another bit pattern
    assert cache.take(np, x, "g") is None


def test_the_lent_patches_are_used_once_and_give_the_rebuilt_answer():
    x = RNG.standard_normal((2, 5, 5, 3))
    f = RNG.standard_normal((3, 3, 3, 2))
    dy = RNG.standard_normal((2, 5, 5, 2))
    conv_patches.CACHE.clear()
    _forward(x, f)
    assert len(conv_patches.CACHE.entries) == 1
    lent = _grad_filter(x, f.shape, dy)
    assert not conv_patches.CACHE.entries  # taken: one forward, one filter gradient
    np.testing.assert_array_equal(lent, _grad_filter(x, f.shape, dy))


def test_take_answers_only_for_the_same_object_with_the_same_bytes():
    cache = conv_patches.PatchCache(1 << 20)
    x = np.zeros((1, 2, 2, 1))
    cache.put(np, x, "g", np.ones((4, 1)))
    y = x
    y[...] = 1.0  # the same object, new values
    assert cache.take(np, y, "g") is None
    cache.put(np, y, "g", np.ones((4, 1)))
    assert cache.take(np, y.copy(), "g") is None  # another object: another id
    assert cache.take(np, y, "g") is not None


def test_the_cache_keeps_to_its_budget():
    cache = conv_patches.PatchCache(1000)
    arrays = [np.full((1, 2, 2, 1), float(i)) for i in range(5)]  # 32 bytes each
    for a in arrays:
        cache.put(np, a, "g", np.ones(50))  # 400 bytes each: two fit
    assert cache.held <= 1000 and len(cache.entries) == 2
    assert cache.take(np, arrays[0], "g") is None  # the oldest went first
    assert cache.take(np, arrays[4], "g") is not None
    cache.put(np, arrays[0], "g", np.ones(200))  # larger than the whole budget: not kept
    assert cache.take(np, arrays[0], "g") is None


def test_a_training_step_matches_numpy_with_the_cache_on_and_off():
    x0 = RNG.standard_normal((4, 8, 8, 1)).astype(np.float32)
    f0 = RNG.standard_normal((3, 3, 1, 2)).astype(np.float32)
    results = []
    for budget in (conv_patches.BUDGET_BYTES, 0):
        conv_patches.CACHE.budget = budget
        try:
            with fb.Graph().as_default(), fb.Session() as s:
                x = fb.placeholder(fb.float32, [None, 8, 8, 1])
                f = fb.Variable(f0)
                loss = fb.reduce_sum(fb.nn.conv2d(x, f, 1, "SAME") ** 2)
                (g,) = fb.gradients(loss, [f])
                s.run(f.initializer)
                results.append([s.run(g, {x: x0 + i}) for i in range(3)])
        finally:
            conv_patches.CACHE.budget = conv_patches.BUDGET_BYTES
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------ pools
def _pool_grad(x, k, s, padding, grad):
    attrs = {"ksize": (1, *k, 1), "strides": (1, *s, 1), "padding": padding}
    y = OPS["MaxPool"].kernel(np, x, **attrs)
    return y, OPS["MaxPoolGrad"].kernel(np, x, y, grad, **attrs)


def _ref_max_pool_grad(x, k, s, padding, grad):
    (oh, top, _), (ow, left, _) = (
        out_size(x.shape[1], k[0], s[0], padding),
        out_size(x.shape[2], k[1], s[1], padding),
    )
    out = np.zeros_like(x)
    for b, r, c, ch in itertools.product(*(range(v) for v in (x.shape[0], oh, ow, x.shape[3]))):
        cells = [
            (r * s[0] - top + i, c * s[1] - left + j) for i in range(k[0]) for j in range(k[1])
        ]
        cells = [(a, e) for a, e in cells if 0 <= a < x.shape[1] and 0 <= e < x.shape[2]]
        vals = [x[b, a, e, ch] for a, e in cells]
        if np.isnan(max(vals, key=lambda v: (np.isnan(v), v))):
            continue  # a NaN maximum: no gradient
        a, e = cells[int(np.argmax(vals))]
        out[b, a, e, ch] += grad[b, r, c, ch]
    return out


POOLS = [  # disjoint windows: tiling exactly, a VALID remainder, SAME padding, gaps
    ((2, 4, 6, 3), (2, 2), (2, 2), "VALID"),
    ((1, 5, 7, 2), (2, 2), (2, 2), "VALID"),
    ((1, 5, 7, 2), (2, 3), (2, 3), "SAME"),
    ((2, 7, 7, 1), (2, 2), (3, 3), "VALID"),
    ((1, 6, 6, 2), (3, 3), (2, 2), "SAME"),  # overlapping
    ((1, 17, 16, 1), (16, 16), (1, 16), "VALID"),  # 256 cells: 32-bit codes
]


@pytest.mark.parametrize("shape,k,s,padding", POOLS, ids=[str(p) for p in POOLS])
def test_max_pool_grad_fast_paths_match_the_loop_reference(shape, k, s, padding):
    x = RNG.integers(-2, 3, shape).astype(np.float32)  # ties everywhere
    oh, ow = out_size(shape[1], k[0], s[0], padding)[0], out_size(shape[2], k[1], s[1], padding)[0]
    grad = RNG.integers(-4, 5, (shape[0], oh, ow, shape[3])).astype(np.float32)
    _, got = _pool_grad(x, k, s, padding, grad)
    np.testing.assert_array_equal(got, _ref_max_pool_grad(x, k, s, padding, grad))


def test_max_pool_grad_nan_window_passes_nothing_and_zeros_are_positive():
    x = np.array([1.0, np.nan, 2.0, 0.0, 5.0, 1.0, 3.0, 4.0], np.float32).reshape(1, 2, 4, 1)
    grad = np.array([3.0, -0.0], np.float32).reshape(1, 1, 2, 1)
    y, dx = _pool_grad(x, (2, 2), (2, 2), "VALID", grad)
    assert np.isnan(y[0, 0, 0, 0]) and y[0, 0, 1, 0] == 4.0
    assert dx.ravel().tolist() == [0.0] * 8
    assert not np.signbit(dx).any()  # -0.0 lands as the adds into zeros would put it: 0.0


# ------------------------------------------------------------ the device path
def _cnn_grads(x0, f0, dilations):
    with fb.Graph().as_default(), fb.Session() as s:
        x = fb.placeholder(fb.float32, x0.shape)
        f = fb.placeholder(fb.float32, f0.shape)
        h = fb.nn.relu(fb.nn.conv2d(x, f, 1, "SAME", dilations=dilations))
        p = fb.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        q = fb.nn.avg_pool(h, [1, 3, 3, 1], [1, 2, 2, 1], "SAME")
        loss = fb.reduce_sum(p * p) + fb.reduce_sum(q)
        return s.run(fb.gradients(loss, [x, f]), {x: x0, f: f0})


@pytest.mark.parametrize("dilations", [None, [1, 2, 2, 1]])
def test_kernels_run_on_a_device_as_on_the_host(dilations):
    """The simulated GPU's xp refuses host arrays: every kernel stays on its xp."""
    x0 = RNG.standard_normal((2, 8, 8, 1)).astype(np.float32)
    f0 = RNG.standard_normal((3, 3, 1, 4)).astype(np.float32)
    host = _cnn_grads(x0, f0, dilations)
    with simulate_gpu() as gpu:
        device = _cnn_grads(x0, f0, dilations)
    assert gpu.uploads >= 2  # the feeds went to the device, and the kernels ran there
    for a, b in zip(host, device):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------ malloc thresholds
def test_heap_policy_is_set_once_and_yields_to_the_environment(monkeypatch):
    fb.Session().close()
    first = heap.apply()
    assert heap.apply() is first  # once per process: the same answer, no second mallopt
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc" and heap.wanted():
        assert first is True
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "0")
    assert heap.wanted() is False
    monkeypatch.setattr(heap, "_done", None)  # as in a fresh process with that environment
    assert heap.apply() is False


# ------------------------------------------------------------ BiasAdd in long rows
# each: value shape, whether the value is a transposed (non-contiguous) view, out= given
BIAS_CASES = [
    ((64, 28, 28, 32), False, False),  # the CNN's activation: the long-row path
    ((64, 28, 28, 32), False, True),
    ((64, 28, 28, 32), True, False),  # not C-contiguous: the plain broadcast
    ((3, 5, 7, 4097), False, False),  # a row longer than LONG_ROW
    ((300, 300), False, True),
    ((4, 3), False, False),  # small: the plain broadcast
]


@pytest.mark.parametrize("shape, transposed, given_out", BIAS_CASES)
def test_add_bias_in_long_rows_is_the_broadcast_add_bit_for_bit(shape, transposed, given_out):
    from flowbook.kernels.bias_kernels import add_bias

    rng = np.random.default_rng(len(shape))
    value = rng.standard_normal(shape).astype(np.float32)
    if transposed:
        value = value.transpose(0, 2, 1, 3)
    value.flat[::11] = -0.0
    value.flat[::13] = np.nan
    value.flat[::17] = np.inf
    bias = rng.standard_normal(value.shape[-1]).astype(np.float32)
    bias[::3] = -0.0
    want = np.add(value, bias)
    out = np.empty_like(want) if given_out else None
    got = add_bias(np, value, bias, out=out)
    assert got.shape == want.shape and got.tobytes() == want.tobytes()
    assert out is None or got is out
    kernel = OPS["BiasAdd"].kernel(np, value, bias)
    assert kernel.tobytes() == want.tobytes()

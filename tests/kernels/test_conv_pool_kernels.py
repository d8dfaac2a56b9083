"""The conv, pool and activation-gradient kernels against plain loop references.

The references below walk every output cell with Python loops (TF's padding
arithmetic written out, ties to the first maximum in row-major order, as
TF's CPU MaxPoolGrad does); the kernels, called through the registry, must
match them exactly for pools (integer-valued inputs full of ties) and to
float rounding for convolutions, over a table of shapes (SAME/VALID, strides
1 and 2, odd sizes) and over random ones (hypothesis).  Then the activations'
gradient ops against finite differences, first and second order, the
bitwise mask, BiasAddGrad's layouts and the BLAS thread policy.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import threadpoolctl
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error
from flowbook.framework.registry import OPS
from flowbook.kernels.pool_kernels import masked
from flowbook.ops.nn import conv_ops
from flowbook.runtime import blas

RNG = np.random.default_rng(19)


# ------------------------------------------------------------ loop references
def _pads(size: int, k: int, s: int, padding: str) -> tuple[int, int]:
    """(output size, pad before) the long way round."""
    if padding == "VALID":
        return (size - k) // s + 1, 0
    out = (size + s - 1) // s
    return out, max((out - 1) * s + k - size, 0) // 2


def _windows(shape, k, s, padding):
    """Per output cell (b, r, c): the list of in-bounds input (row, col) of its window."""
    (oh, top), (ow, left) = (
        _pads(shape[1], k[0], s[0], padding),
        _pads(shape[2], k[1], s[1], padding),
    )
    for r, c in itertools.product(range(oh), range(ow)):
        cells = [
            (r * s[0] - top + i, c * s[1] - left + j) for i in range(k[0]) for j in range(k[1])
        ]
        yield r, c, [(y, x) for y, x in cells if 0 <= y < shape[1] and 0 <= x < shape[2]]


def _out_shape(shape, k, s, padding):
    return _pads(shape[1], k[0], s[0], padding)[0], _pads(shape[2], k[1], s[1], padding)[0]


def ref_pools(x, k, s, padding, grad):
    """(max pool, avg pool, MaxPoolGrad of ``grad``, AvgPoolGrad of ``grad``) by loops."""
    oh, ow = _out_shape(x.shape, k, s, padding)
    mx = np.zeros((x.shape[0], oh, ow, x.shape[3]), x.dtype)
    av, dmax, davg = np.zeros_like(mx), np.zeros_like(x), np.zeros_like(x)
    for r, c, cells in _windows(x.shape, k, s, padding):
        for b, ch in itertools.product(range(x.shape[0]), range(x.shape[3])):
            vals = [x[b, y, xx, ch] for y, xx in cells]
            first = int(np.argmax(vals))  # numpy's argmax: the first maximum
            mx[b, r, c, ch] = vals[first]
            av[b, r, c, ch] = sum(vals) / len(vals)
            dmax[b, cells[first][0], cells[first][1], ch] += grad[b, r, c, ch]
            for y, xx in cells:
                davg[b, y, xx, ch] += grad[b, r, c, ch] / len(cells)
    return mx, av, dmax, davg


def ref_conv(x, f, s, padding, dy):
    """(Conv2D, its input gradient, its filter gradient for ``dy``) by loops."""
    k = f.shape[:2]
    oh, ow = _out_shape(x.shape, k, s, padding)
    top = _pads(x.shape[1], k[0], s[0], padding)[1]
    left = _pads(x.shape[2], k[1], s[1], padding)[1]
    y = np.zeros((x.shape[0], oh, ow, f.shape[3]))
    dx, df = np.zeros(x.shape), np.zeros(f.shape)
    for r, c, i, j in itertools.product(range(oh), range(ow), range(k[0]), range(k[1])):
        yy, xx = r * s[0] - top + i, c * s[1] - left + j
        if 0 <= yy < x.shape[1] and 0 <= xx < x.shape[2]:
            y[:, r, c] += x[:, yy, xx] @ f[i, j]
            dx[:, yy, xx] += dy[:, r, c] @ f[i, j].T
            df[i, j] += x[:, yy, xx].T @ dy[:, r, c]
    return y, dx, df


def _pool_kernels(x, k, s, padding, grad):
    attrs = {"ksize": (1, *k, 1), "strides": (1, *s, 1), "padding": padding}
    y = OPS["MaxPool"].kernel(np, x, **attrs)
    return (
        y,
        OPS["AvgPool"].kernel(np, x, **attrs),
        OPS["MaxPoolGrad"].kernel(np, x, y, grad, **attrs),
        OPS["AvgPoolGrad"].kernel(np, np.array(x.shape), grad, **attrs),
    )


def _check_pools(shape, k, s, padding, dtype=np.float64):
    x = RNG.integers(-2, 3, shape).astype(dtype)  # few values: ties everywhere
    oh, ow = _out_shape(shape, k, s, padding)
    grad = RNG.integers(-4, 5, (shape[0], oh, ow, shape[3])).astype(dtype)
    got, want = _pool_kernels(x, k, s, padding, grad), ref_pools(x, k, s, padding, grad)
    for name, a, b in zip(("MaxPool", "AvgPool", "MaxPoolGrad", "AvgPoolGrad"), got, want):
        if name.startswith("Max"):  # integers and a max: exact
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


def _check_conv(shape, k, s, padding, cout=3):
    x = RNG.standard_normal(shape)
    f = RNG.standard_normal((*k, shape[3], cout))
    attrs = {"strides": (1, *s, 1), "padding": padding}
    y = OPS["Conv2D"].kernel(np, x, f, **attrs)
    dy = RNG.standard_normal(y.shape)
    ry, rdx, rdf = ref_conv(x, f, s, padding, dy)
    np.testing.assert_allclose(y, ry, rtol=1e-10, atol=1e-10)
    dx = OPS["Conv2DBackpropInput"].kernel(np, np.array(shape), f, dy, **attrs)
    np.testing.assert_allclose(dx, rdx, rtol=1e-10, atol=1e-10)
    df = OPS["Conv2DBackpropFilter"].kernel(np, x, np.array(f.shape), dy, **attrs)
    np.testing.assert_allclose(df, rdf, rtol=1e-10, atol=1e-10)


WINDOWS = [  # (input shape, window, strides): odd sizes, overlapping and disjoint windows
    ((2, 5, 5, 2), (2, 2), (2, 2)),
    ((1, 7, 6, 3), (3, 3), (2, 2)),
    ((2, 6, 6, 1), (3, 3), (1, 1)),
    ((1, 5, 7, 2), (2, 3), (1, 2)),
    ((1, 4, 4, 2), (1, 1), (2, 2)),
    ((1, 9, 5, 1), (2, 2), (3, 3)),
    ((2, 3, 3, 2), (3, 3), (1, 1)),
]


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("shape,k,s", WINDOWS, ids=[f"{w[0]}-k{w[1]}-s{w[2]}" for w in WINDOWS])
def test_pools_match_the_loop_reference(shape, k, s, padding):
    _check_pools(shape, k, s, padding)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("shape,k,s", WINDOWS, ids=[f"{w[0]}-k{w[1]}-s{w[2]}" for w in WINDOWS])
def test_convolutions_match_the_loop_reference(shape, k, s, padding):
    _check_conv(shape, k, s, padding)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("shape,k,s", WINDOWS, ids=[f"{w[0]}-k{w[1]}-s{w[2]}" for w in WINDOWS])
def test_filter_gradient_row_by_row_matches_the_loop_reference(shape, k, s, padding, monkeypatch):
    monkeypatch.setattr(conv_ops, "_ROWS_ABOVE_BYTES", 0)  # the path large convolutions take
    _check_conv(shape, k, s, padding)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 2),
    h=st.integers(1, 8),
    w=st.integers(1, 8),
    c=st.integers(1, 3),
    k=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    s=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from(["SAME", "VALID"]),
)
def test_random_windows_match_the_loop_reference(n, h, w, c, k, s, padding):
    if padding == "VALID" and (h < k[0] or w < k[1]):
        return  # no window fits: the ops raise (tests/ops/test_nn_ops.py)
    _check_pools((n, h, w, c), k, s, padding)
    _check_conv((n, h, w, c), k, s, padding, cout=2)


def test_max_pool_grad_gives_a_tie_to_its_first_cell_only():
    x = np.array([[5.0, 5.0], [5.0, 1.0]]).reshape(1, 2, 2, 1)
    attrs = {"ksize": (1, 2, 2, 1), "strides": (1, 2, 2, 1), "padding": "VALID"}
    dx = OPS["MaxPoolGrad"].kernel(np, x, x[:, :1, :1], np.full((1, 1, 1, 1), 7.0), **attrs)
    assert dx[0, :, :, 0].tolist() == [[7.0, 0.0], [0.0, 0.0]]


def test_max_pool_grad_keeps_an_infinite_gradient_on_its_cell():
    """Masking is a select, not a product: inf * 0 would spread NaN over the window."""
    x = np.array([1.0, 3.0, 2.0, 0.0], np.float32).reshape(1, 2, 2, 1)
    attrs = {"ksize": (1, 2, 2, 1), "strides": (1, 2, 2, 1), "padding": "VALID"}
    dx = OPS["MaxPoolGrad"].kernel(
        np, x, x[:, :1, :1], np.full((1, 1, 1, 1), np.inf, np.float32), **attrs
    )
    assert dx.ravel().tolist() == [0.0, np.inf, 0.0, 0.0]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.int64])
def test_masked_is_where_bit_for_bit(dtype):
    values = np.array([-0.0, 1.5, -2.0, 3.0, 7.0, -1.0]).astype(dtype)
    if np.dtype(dtype).kind == "f":
        values[3:5] = [np.inf, np.nan]
    mask = np.array([True, False, True, True, True, False])
    want = np.where(mask, values, np.zeros((), dtype))
    assert masked(np, mask, values).tobytes() == want.tobytes()


# ------------------------------------------------------------ activation gradient ops
ACTS = {  # activation, input values away from its kinks
    "Relu": (fb.nn.relu, [-1.5, -0.3, 0.4, 2.0]),
    "Relu6": (fb.nn.relu6, [-1.5, 0.4, 5.5, 7.0]),
    "Elu": (fb.nn.elu, [-1.5, -0.3, 0.4, 2.0]),
    "Selu": (fb.nn.selu, [-1.5, -0.3, 0.4, 2.0]),
    "Softplus": (fb.nn.softplus, [-1.5, -0.3, 0.4, 2.0]),
    "LeakyRelu": (lambda t: fb.nn.leaky_relu(t, 0.3), [-1.5, -0.3, 0.4, 2.0]),
}


@pytest.mark.parametrize("name", ACTS)
def test_activation_gradients_are_one_op_and_match_finite_differences(name):
    f, values = ACTS[name]
    x0 = np.array(values)
    with fb.Graph().as_default():
        x = fb.placeholder(fb.float64, [4])
        y = f(x)
        (g,) = fb.gradients(fb.reduce_sum(y * y), x)
        assert g.op.type == f"{name}Grad"
        assert compute_gradient_error(x, [4], y, [4], x_init_value=x0) < 1e-6
        # second order: through the gradient op's own gradient
        assert compute_gradient_error(x, [4], g, [4], x_init_value=x0) < 1e-5


@pytest.mark.parametrize("name", ACTS)
def test_activation_grad_ops_differentiate_in_their_gradients_input(name):
    """d(ActGrad(g, x))/dg against finite differences, with x held fixed."""
    f, values = ACTS[name]
    with fb.Graph().as_default():
        x = fb.constant(np.array(values))
        gin = fb.placeholder(fb.float64, [4])
        (g,) = fb.gradients(f(x), x, grad_ys=gin)
        err = compute_gradient_error(gin, [4], g, [4], x_init_value=np.array([0.5, -1.0, 2.0, 1.5]))
        assert err < 1e-6


def test_relu_grad_gradient_is_tf_s():
    """TF: ReluGrad(grad_of_grad, features) for the first input, zeros for the second."""
    with fb.Graph().as_default(), fb.Session() as s:
        x = fb.constant([-1.0, 2.0, 3.0])
        gin = fb.constant([4.0, 5.0, 6.0])
        (g,) = fb.gradients(fb.nn.relu(x), x, grad_ys=gin)
        dg, dx = fb.gradients(g, [gin, x], grad_ys=fb.constant([1.0, 1.0, 2.0]))
        assert dg.op.type == "ReluGrad"
        assert s.run(dg).tolist() == [0.0, 1.0, 2.0] and s.run(dx).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "op_type,want,signs",
    [  # observed in TensorFlow 2.21 (raw ops, CPU): the gradient times the mask
        ("ReluGrad", [-0.0, np.nan, np.nan, 2.0, -3.0], [1, 1, 0, 0, 1]),
        ("Relu6Grad", [-0.0, np.nan, np.nan, 2.0, -0.0], [1, 1, 0, 0, 1]),
    ],
)
def test_relu_grads_multiply_by_the_mask_as_tensorflow(op_type, want, signs):
    from flowbook.framework.registry import OPS

    g = np.array([-1.0, np.inf, np.nan, 2.0, -3.0], np.float32)
    y = np.array([-1.0, -1.0, -1.0, 1.0, 7.0], np.float32)
    with np.errstate(invalid="ignore"):
        got = OPS[op_type].kernel(np, g, y)
    want = np.array(want, np.float32)
    assert got.dtype == np.float32 and np.signbit(got).tolist() == [bool(b) for b in signs]
    assert np.array_equal(got, want, equal_nan=True)


def test_activation_grad_shapes_must_agree():
    with fb.Graph().as_default():
        with pytest.raises(ValueError, match="ReluGrad: gradients and features"):
            fb.get_default_graph().create_op("ReluGrad", [fb.ones([3]), fb.ones([4])])
        a, b = fb.placeholder(fb.float32), fb.placeholder(fb.float32)
        op = fb.get_default_graph().create_op("ReluGrad", [a, b])
        with fb.Session() as s, pytest.raises(fb.errors.InvalidArgumentError, match="same shape"):
            s.run(op.outputs[0], {a: np.ones(3), b: np.ones(4)})


@pytest.mark.parametrize("data_format,axis", [("NHWC", 3), ("NCHW", 1)])
def test_bias_add_gradient_is_bias_add_grad(data_format, axis):
    v = RNG.standard_normal((2, 3, 4, 5))
    bias = RNG.standard_normal(v.shape[axis])
    with fb.Graph().as_default(), fb.Session() as s:
        b = fb.constant(bias)
        (g,) = fb.gradients(fb.reduce_sum(fb.nn.bias_add(v, b, data_format) * v), b)
        assert g.op.type == "BiasAddGrad"
        want = v.sum(axis=tuple(d for d in range(4) if d != axis))
        np.testing.assert_allclose(s.run(g), want)


# ------------------------------------------------------------ BLAS threads
def test_blas_policy_honours_intra_op_threads(monkeypatch):
    controller = threadpoolctl.ThreadpoolController().select(user_api="blas")
    before = [lib.num_threads for lib in controller.lib_controllers]
    monkeypatch.setattr(blas, "_applied", blas._applied)  # restored after the test
    monkeypatch.setattr(blas, "_modules", blas._modules)
    try:
        fb.Session(config=fb.ConfigProto(intra_op_parallelism_threads=2)).close()
        assert set(blas.blas_threads()) == {2}
        fb.Session(config=fb.ConfigProto(intra_op_parallelism_threads=1)).close()
        assert set(blas.blas_threads()) == {1}
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setattr(blas, "_cpus", lambda: 64)
        assert blas.wanted(0) is None  # a big machine: BLAS's own choice
        monkeypatch.setattr(blas, "_cpus", lambda: 2)
        assert blas.wanted(0) == 1  # a small one: one thread
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
        assert blas.wanted(0) is None  # unless the environment says
        assert blas.wanted(3) == 3
    finally:
        for lib, n in zip(controller.lib_controllers, before):
            lib.set_num_threads(n)


@pytest.mark.parametrize(
    "shape, dtype",
    [
        ((100, 128), np.float32),  # one row
        ((64, 28, 28, 32), np.float32),  # rows of 28*28*32
        ((3, 70000), np.float64),  # a last axis longer than a row: the scalar loop
        ((50, 7), np.int32),
        ((40, 33, 5), np.float16),
        ((0, 4), np.float32),
        ((), np.float32),
    ],
)
@pytest.mark.parametrize("into", [False, True])
def test_relu_against_a_row_of_zeros_is_maximum_with_zero_bit_for_bit(shape, dtype, into):
    from flowbook.kernels.bias_kernels import relu

    rng = np.random.default_rng(3)
    v = np.asarray(rng.standard_normal(shape) * 4).astype(dtype)
    if v.dtype.kind == "f" and v.size > 4:
        v.flat[:4] = [np.nan, -0.0, np.inf, -np.inf]
    want = np.maximum(v, 0)
    got = relu(np, v, out=v.copy() if into else None)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    t = np.ascontiguousarray(v.T) if v.ndim == 2 else v  # and a non-contiguous view
    view = t.T if v.ndim == 2 else v
    assert np.asarray(relu(np, view)).tobytes() == np.asarray(np.maximum(view, 0)).tobytes()


def test_relu_keeps_a_bounded_number_of_zero_rows():
    from flowbook.kernels import bias_kernels

    for n in range(100, 100 + 2 * bias_kernels.MAX_ZERO_ROWS):  # a new row length each
        v = np.arange(-n, n, 2, dtype=np.float32).reshape(1, n)
        assert bias_kernels.relu(np, v).tobytes() == np.maximum(v, 0).tobytes()
        assert len(bias_kernels._ZERO_ROWS) <= bias_kernels.MAX_ZERO_ROWS

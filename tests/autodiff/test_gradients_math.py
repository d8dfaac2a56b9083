"""Gradients of the math, reduction, matrix and activation ops, as tables over the registry.

Each differentiable op is checked in float64 against central finite
differences (``compute_gradient_error``) on inputs away from its kinks, with
broadcasting, with unknown static shapes (the dynamic paths), and a few
against numpy-derived formulas; every op type these modules register must
declare its gradient.
"""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.autodiff.gradient_checker import compute_gradient_error
from flowbook.framework import dtypes
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OPS
from flowbook.ops.array import cast_ops
from flowbook.ops.linalg import linalg_ops
from flowbook.ops.math import (
    elementwise,
    elementwise_ops,
    math_ops,
    reduction_ops,
)
from flowbook.ops.nn import nn_ops
from tests.ops import test_special_ops

RNG = np.random.default_rng(7)
TOL = 1e-6
F64 = fb.float64
MODULES = {
    m.__name__
    for m in (
        math_ops,
        elementwise,
        elementwise_ops,
        cast_ops,
        reduction_ops,
        linalg_ops,
        nn_ops,
    )
}


def _uniform(lo: float, hi: float, shape: tuple) -> np.ndarray:
    return RNG.uniform(lo, hi, shape)


def _signed(lo: float, hi: float, shape: tuple) -> np.ndarray:
    """Magnitudes in [lo, hi] with random signs: away from 0."""
    return _uniform(lo, hi, shape) * RNG.choice([-1.0, 1.0], shape)


def _error(f, values: list[np.ndarray], wrt: int, static: bool | str = True) -> float:
    """The largest Jacobian error of f(*placeholders) w.r.t. input ``wrt``, the others fed."""

    def shape(v):  # static; unknown dims (static=False); unknown rank (static="rank")
        return v.shape if static is True else [None] * v.ndim if static is False else None

    phs = [fb.placeholder(F64, shape(v), name=f"in{i}") for i, v in enumerate(values)]
    y = f(*phs)
    out_shape = np.shape(fb.Session().run(y, dict(zip(phs, values))))
    feed = {p: v for i, (p, v) in enumerate(zip(phs, values)) if i != wrt}
    x = phs[wrt]
    return compute_gradient_error(
        x, values[wrt].shape, y, out_shape, x_init_value=values[wrt], extra_feed_dict=feed
    )


def _grad(y, x, seed=None):
    (g,) = fb.gradients(y, [x], grad_ys=None if seed is None else [np.asarray(seed)])
    return g


# ------------------------------------------------------------ registry coverage
def _own_op_types() -> list[str]:
    rows = math_ops.BINARY + math_ops.UNARY
    named = [r.op_type for r in rows] + ["AddV2", "Cast", "AddN", "ArgMax", "ArgMin"]
    named += [r.op_type for r in reduction_ops.REDUCTIONS]
    named += ["MatMul", "BatchMatMulV2", "MatrixInverse", "MatrixDeterminant"]
    named += [a[0] for a in nn_ops.ACTIVATIONS] + ["Softmax", "LogSoftmax"]
    by_module = [n for n, d in OPS.items() if getattr(d.infer, "__module__", "") in MODULES]
    return sorted(set(named) | set(by_module))


@pytest.mark.parametrize("op_type", _own_op_types())
def test_every_op_declares_its_gradient(op_type):
    grad = OPS[op_type].grad
    assert grad is NOT_DIFFERENTIABLE or callable(grad), f"{op_type} has no gradient declared"


NON_DIFF = [
    "Less",
    "LessEqual",
    "Greater",
    "GreaterEqual",
    "Equal",
    "NotEqual",
    "LogicalAnd",
    "LogicalOr",
    "LogicalNot",
    "IsNan",
    "IsInf",
    "IsFinite",
    "Floor",
    "Ceil",
    "Round",
    "ArgMax",
    "ArgMin",
    "All",
    "Any",
    "Rint",
    "TruncateDiv",
    "TruncateMod",
]


@pytest.mark.parametrize("op_type", NON_DIFF)
def test_not_differentiable(op_type):
    assert OPS[op_type].grad is NOT_DIFFERENTIABLE


def test_bool_outputs_are_not_differentiable():
    for row in math_ops.BINARY + math_ops.UNARY:
        if row.out is dtypes.bool:
            assert OPS[row.op_type].grad is NOT_DIFFERENTIABLE, row.op_type


# ------------------------------------------------------------------- binary
def _maxmin_values(sx, sy):
    while True:  # |x - y| >= 0.1 wherever they meet: no ties, no kinks
        x, y = _uniform(-2, 2, sx), _uniform(-2, 2, sy)
        if np.min(np.abs(x - y)) >= 0.1:
            return x, y


def _floormod_values(sx, sy):
    y = _uniform(1.5, 2.5, sy)
    frac = _uniform(0.2, 0.8, np.broadcast_shapes(sx, sy))
    x = (RNG.integers(-2, 3, frac.shape) + frac) * y  # x / y away from whole numbers
    if x.shape != sx:  # x must keep its own shape: make y the broadcast side only
        x = _uniform(0.2, 0.8, sx) * np.min(y)
    return x, y


# op type -> values(sx, sy) for a gradient check away from kinks and poles
BINARY_DOMAINS = {
    "Add": lambda sx, sy: (_uniform(-2, 2, sx), _uniform(-2, 2, sy)),
    "Sub": lambda sx, sy: (_uniform(-2, 2, sx), _uniform(-2, 2, sy)),
    "Mul": lambda sx, sy: (_uniform(-2, 2, sx), _uniform(-2, 2, sy)),
    "RealDiv": lambda sx, sy: (_uniform(-2, 2, sx), _signed(0.5, 2, sy)),
    "FloorMod": _floormod_values,
    "Pow": lambda sx, sy: (_uniform(0.5, 2, sx), _uniform(-1.5, 2, sy)),
    "Maximum": _maxmin_values,
    "Minimum": _maxmin_values,
    "SquaredDifference": lambda sx, sy: (_uniform(-2, 2, sx), _uniform(-2, 2, sy)),
    "Atan2": lambda sx, sy: (_signed(0.5, 2, sx), _signed(0.5, 2, sy)),
    "DivNoNan": lambda sx, sy: (_uniform(-2, 2, sx), _signed(0.5, 2, sy)),
}
BINARY_NONE = {
    "FloorDiv",
    "TruncateDiv",
    "TruncateMod",
    "NextAfter",
}  # TF: no gradient for either input
SHAPE_PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3)), ((2, 3), ())]
FLOAT_BINARY = [r for r in math_ops.BINARY if r.out is None and dtypes.float64 in r.dtypes]


def test_binary_table_is_covered():
    assert {r.op_type for r in FLOAT_BINARY} == set(BINARY_DOMAINS) | BINARY_NONE


def _binary_fn(op_type):
    return lambda a, b: fb.get_default_graph().create_op(op_type, (a, b)).outputs[0]


@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("op_type", sorted(BINARY_DOMAINS))
def test_binary_gradient(op_type, shapes):
    x, y = BINARY_DOMAINS[op_type](*shapes)
    for wrt in (0, 1):
        assert _error(_binary_fn(op_type), [x, y], wrt) < TOL, f"input {wrt}"


@pytest.mark.parametrize("static", [False, "rank"], ids=["unknown-dims", "unknown-rank"])
@pytest.mark.parametrize("shapes", [((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3))], ids=str)
@pytest.mark.parametrize("op_type", sorted(BINARY_DOMAINS))
def test_binary_gradient_unknown_shapes(op_type, shapes, static):
    x, y = BINARY_DOMAINS[op_type](*shapes)
    for wrt in (0, 1):
        assert _error(_binary_fn(op_type), [x, y], wrt, static) < TOL, f"input {wrt}"


def test_floordiv_has_no_gradient():
    x, y = fb.constant([3.0, 5.0], F64), fb.constant([2.0, 2.0], F64)
    assert fb.gradients(fb.floordiv(x, y), [x, y]) == [None, None]


def test_pow_exponent_gradient_is_zero_where_base_is_not_positive():
    x, y = fb.constant([0.0, -2.0, 2.0], F64), fb.constant([2.0, 2.0, 3.0], F64)
    gx, gy = fb.gradients(fb.pow(x, y), [x, y])
    with fb.Session() as s:
        vx, vy = s.run([gx, gy])
    np.testing.assert_allclose(vx, [0.0, -4.0, 12.0])
    np.testing.assert_allclose(vy, [0.0, 0.0, 8.0 * np.log(2.0)])


def test_maximum_minimum_ties_go_to_x():
    x, y = fb.constant([1.0, 2.0, 3.0], F64), fb.constant([1.0, 1.0, 4.0], F64)
    with fb.Session() as s:
        assert s.run(fb.gradients(fb.maximum(x, y), [x, y])[0]).tolist() == [1.0, 1.0, 0.0]
        assert s.run(fb.gradients(fb.minimum(x, y), [x, y])[1]).tolist() == [0.0, 1.0, 0.0]


# -------------------------------------------------------------------- unary
UNARY_DOMAINS = {  # op type -> values(shape)
    "Neg": lambda s: _uniform(-2, 2, s),
    "Abs": lambda s: _signed(0.2, 2, s),
    "Square": lambda s: _uniform(-2, 2, s),
    "Sqrt": lambda s: _uniform(0.5, 3, s),
    "Rsqrt": lambda s: _uniform(0.5, 3, s),
    "Exp": lambda s: _uniform(-2, 2, s),
    "Log": lambda s: _uniform(0.5, 3, s),
    "Log1p": lambda s: _uniform(-0.5, 2, s),
    "Sigmoid": lambda s: _uniform(-3, 3, s),
    "Tanh": lambda s: _uniform(-2, 2, s),
    "Sign": lambda s: _signed(0.2, 2, s),
    "Reciprocal": lambda s: _signed(0.5, 2, s),
    "Sin": lambda s: _uniform(-3, 3, s),
    "Cos": lambda s: _uniform(-3, 3, s),
    "Tan": lambda s: _uniform(-1, 1, s),
    "Asin": lambda s: _uniform(-0.8, 0.8, s),
    "Acos": lambda s: _uniform(-0.8, 0.8, s),
    "Atan": lambda s: _uniform(-2, 2, s),
    "Sinh": lambda s: _uniform(-2, 2, s),
    "Cosh": lambda s: _uniform(-2, 2, s),
    "Asinh": lambda s: _uniform(-2, 2, s),
    "Acosh": lambda s: _uniform(1.2, 3, s),
    "Atanh": lambda s: _uniform(-0.8, 0.8, s),
    "Expm1": lambda s: _uniform(-2, 2, s),
    **test_special_ops.GRAD_DOMAINS,
}
UNARY_NONE = {"Floor", "Ceil", "Round", "Rint"}
FLOAT_UNARY = [r for r in math_ops.UNARY if r.out is None and dtypes.float64 in r.dtypes]


def test_unary_table_is_covered():
    assert {r.op_type for r in FLOAT_UNARY} == set(UNARY_DOMAINS) | UNARY_NONE


@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown"])
@pytest.mark.parametrize("op_type", sorted(UNARY_DOMAINS))
def test_unary_gradient(op_type, static):
    f = lambda a: fb.get_default_graph().create_op(op_type, (a,)).outputs[0]
    assert _error(f, [UNARY_DOMAINS[op_type]((2, 3))], 0, static) < TOL


@pytest.mark.parametrize("op_type", sorted(UNARY_NONE))
def test_unary_without_gradient(op_type):
    x = fb.constant([1.5, -0.5], F64)
    y = fb.get_default_graph().create_op(op_type, (x,)).outputs[0]
    assert fb.gradients(y, [x]) == [None]


def test_unary_against_numpy():
    v = np.array([0.3, 1.2, 2.5])
    x = fb.constant(v)
    seed = np.array([1.0, -2.0, 0.5])
    cases = {
        fb.sqrt: 0.5 / np.sqrt(v),
        fb.rsqrt: -0.5 * v**-1.5,
        fb.sigmoid: np.exp(-v) / (1 + np.exp(-v)) ** 2,
        fb.tanh: 1 / np.cosh(v) ** 2,
        fb.log1p: 1 / (1 + v),
        fb.reciprocal: -1 / v**2,
    }
    with fb.Session() as s:
        for fn, ref in cases.items():
            np.testing.assert_allclose(s.run(_grad(fn(x), x, seed)), seed * ref, rtol=1e-12)


def test_sign_gradient_is_zeros():
    x = fb.constant([-1.0, 0.0, 2.0], F64)
    with fb.Session() as s:
        assert s.run(_grad(fb.sign(x), x)).tolist() == [0.0, 0.0, 0.0]


def test_conj_gradient_conjugates():
    z = fb.constant([1 + 2j, 3 - 1j], fb.complex128)
    seed = np.array([2 + 1j, -1j])
    with fb.Session() as s:
        np.testing.assert_allclose(s.run(_grad(fb.conj(z), z, seed)), np.conj(seed))


# --------------------------------------------------------------------- Cast
def test_cast_between_floats_passes_the_gradient():
    x = fb.constant([1.0, 2.0], F64)
    g = _grad(fb.cast(x, fb.float32) * 3.0, x)
    assert g.dtype is F64
    with fb.Session() as s:
        assert s.run(g).tolist() == [3.0, 3.0]


def test_cast_to_or_from_int_stops_the_gradient():
    x = fb.constant([1.5, 2.5], F64)
    assert fb.gradients(fb.cast(fb.cast(x, fb.int32), F64), [x]) == [None]
    assert OPS["Cast"].grad(fb.cast(x, fb.int32).op, fb.constant([1, 1])) is None


# --------------------------------------------------------------- reductions
AXES = [None, 0, 1, -1, [0, 2], [0, 1, 2]]
REDUCE = {
    "Sum": (fb.reduce_sum, lambda s: _uniform(-2, 2, s)),
    "Mean": (fb.reduce_mean, lambda s: _uniform(-2, 2, s)),
    "Max": (fb.reduce_max, lambda s: RNG.permutation(np.arange(np.prod(s))).reshape(s) * 0.3),
    "Min": (fb.reduce_min, lambda s: RNG.permutation(np.arange(np.prod(s))).reshape(s) * 0.3),
    "Prod": (fb.reduce_prod, lambda s: _signed(0.5, 1.5, s)),
}


def test_reduction_table_is_covered():
    rows = {r.op_type for r in reduction_ops.REDUCTIONS}
    assert rows == set(REDUCE) | {"All", "Any"}


@pytest.mark.parametrize("keepdims", [False, True], ids=["drop", "keep"])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("op_type", sorted(REDUCE))
def test_reduction_gradient(op_type, axis, keepdims):
    fn, values = REDUCE[op_type]
    f = lambda a: fn(a, axis=axis, keepdims=keepdims)
    assert _error(f, [values((2, 3, 2))], 0) < TOL


@pytest.mark.parametrize("static", [False, "rank"], ids=["unknown-dims", "unknown-rank"])
@pytest.mark.parametrize("axis", [None, 1, [0, 2], -1], ids=str)
@pytest.mark.parametrize("op_type", sorted(REDUCE))
def test_reduction_gradient_unknown_shapes(op_type, axis, static):
    fn, values = REDUCE[op_type]
    for keepdims in (False, True):
        f = lambda a, kd=keepdims: fn(a, axis=axis, keepdims=kd)
        assert _error(f, [values((2, 3, 2))], 0, static) < TOL


def test_reduction_gradient_with_axes_fed():
    x = fb.placeholder(F64, [2, 3])
    axis = fb.placeholder(fb.int32, [None])
    y = fb.reduce_sum(fb.reduce_mean(x * x, axis=axis, keepdims=True))
    with fb.Session() as s:
        v = np.arange(6.0).reshape(2, 3)
        got = s.run(_grad(y, x), {x: v, axis: [-1]})
    np.testing.assert_allclose(got, 2 * v / 3)


def test_scalar_reductions():
    for fn in (fb.reduce_sum, fb.reduce_mean, fb.reduce_max, fb.reduce_prod):
        assert _error(lambda a, fn=fn: fn(a) * 2.0, [np.array(1.5)], 0) < TOL


def test_max_min_ties_share_the_gradient():
    v = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    x = fb.constant(v)
    with fb.Session() as s:
        got = s.run(_grad(fb.reduce_max(x, axis=1), x, [2.0, 3.0]))
        np.testing.assert_allclose(got, [[0, 1, 1], [1, 1, 1]])
        got = s.run(_grad(fb.reduce_min(x, axis=1, keepdims=True), x, [[1.0], [3.0]]))
        np.testing.assert_allclose(got, [[1, 0, 0], [1, 1, 1]])
        np.testing.assert_allclose(s.run(_grad(fb.reduce_max(x), x)), (v == 3) / 2)


@pytest.mark.parametrize(
    "row", [[0.0, 2.0, 3.0], [0.0, 0.0, 3.0], [1.5, 2.0, 4.0], [0.0, 0.0, 0.0]], ids=str
)
def test_prod_gradient_with_zeros(row):
    v = np.array(row)
    ref = [np.prod(np.delete(v, i)) for i in range(3)]  # the product of the others
    x = fb.constant(v)
    with fb.Session() as s:
        np.testing.assert_allclose(s.run(_grad(fb.reduce_prod(x), x)), ref)
    assert _error(lambda a: fb.reduce_prod(a, axis=0), [v], 0) < TOL  # a polynomial: FD is exact


def test_prod_gradient_with_zeros_along_an_axis():
    v = np.array([[0.0, 2.0], [3.0, 0.0], [0.0, 0.0]])
    assert _error(lambda a: fb.reduce_prod(a, axis=1), [v], 0) < TOL
    assert _error(lambda a: fb.reduce_prod(a, axis=0), [v], 0, static=False) < TOL


def test_add_n_gradient():
    vals = [_uniform(-1, 1, (2, 2)) for _ in range(3)]
    for wrt in range(3):
        f = lambda a, b, c: fb.add_n([a, b * b, c]) * 2.0
        assert _error(f, vals, wrt) < TOL


# ------------------------------------------------------------------- linalg
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("ta", [False, True])
def test_matmul_gradient(ta, tb):
    a = _uniform(-1, 1, (3, 2) if ta else (2, 3))
    b = _uniform(-1, 1, (4, 3) if tb else (3, 4))
    f = lambda x, y: fb.matmul(x, y, transpose_a=ta, transpose_b=tb)
    for wrt in (0, 1):
        assert _error(f, [a, b], wrt) < TOL
    assert _error(f, [a, b], 1, static=False) < TOL


def test_matmul_gradient_against_numpy():
    a, b = _uniform(-1, 1, (2, 3)), _uniform(-1, 1, (3, 4))
    g = _uniform(-1, 1, (2, 4))
    x, y = fb.constant(a), fb.constant(b)
    ga, gb = fb.gradients(fb.matmul(x, y), [x, y], grad_ys=g)
    with fb.Session() as s:
        np.testing.assert_allclose(s.run(ga), g @ b.T)
        np.testing.assert_allclose(s.run(gb), a.T @ g)


BATCH_CASES = [
    ((2, 2, 3), (2, 3, 4)),
    ((2, 2, 3), (3, 4)),
    ((2, 3), (2, 3, 4)),
    ((1, 2, 3), (2, 3, 2)),
]


@pytest.mark.parametrize("static", [True, False, "rank"], ids=["static", "unknown", "rank"])
@pytest.mark.parametrize("adj", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("shapes", BATCH_CASES, ids=str)
def test_batch_matmul_gradient(shapes, adj, static):
    sa, sb = (list(s) for s in shapes)
    if adj[0]:
        sa[-1], sa[-2] = sa[-2], sa[-1]
    if adj[1]:
        sb[-1], sb[-2] = sb[-2], sb[-1]
    a, b = _uniform(-1, 1, tuple(sa)), _uniform(-1, 1, tuple(sb))

    def f(x, y):
        out = fb.get_default_graph().create_op(
            "BatchMatMulV2", (x, y), {"adj_x": adj[0], "adj_y": adj[1]}
        )
        return out.outputs[0]

    for wrt in (0, 1):
        assert _error(f, [a, b], wrt, static) < TOL


def _well_conditioned(shape):
    return _uniform(-1, 1, shape) + 3 * np.eye(shape[-1])


@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("shape", [(3, 3), (2, 2, 2)], ids=str)
def test_matrix_inverse_gradient(shape, adjoint):
    f = lambda a: fb.matrix_inverse(a, adjoint=adjoint)
    assert _error(f, [_well_conditioned(shape)], 0) < TOL


@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 2, 2)], ids=str)
def test_matrix_determinant_gradient(shape, static):
    assert _error(fb.matrix_determinant, [_well_conditioned(shape)], 0, static) < 1e-5


def test_determinant_gradient_against_numpy():
    v = _well_conditioned((3, 3))
    x = fb.constant(v)
    with fb.Session() as s:
        got = s.run(_grad(fb.matrix_determinant(x), x))
    np.testing.assert_allclose(got, np.linalg.det(v) * np.linalg.inv(v).T)


# -------------------------------------------------------------- activations
ACTIVATION_DOMAINS = {
    "Relu": lambda s: _signed(0.2, 2, s),
    "Relu6": lambda s: RNG.choice([-1.0, 1.0, 3.0, 5.0, 7.0], s) + _uniform(-0.5, 0.5, s),
    "Elu": lambda s: _signed(0.2, 2, s),
    "Softplus": lambda s: _uniform(-3, 3, s),
    "Selu": lambda s: _signed(0.2, 2, s),
    "Softsign": lambda s: _signed(0.2, 2, s),
}


def test_activation_table_is_covered():
    assert {a[0] for a in nn_ops.ACTIVATIONS} == set(ACTIVATION_DOMAINS)


@pytest.mark.parametrize("static", [True, False], ids=["static", "unknown"])
@pytest.mark.parametrize("op_type", sorted(ACTIVATION_DOMAINS))
def test_activation_gradient(op_type, static):
    f = lambda a: fb.get_default_graph().create_op(op_type, (a,)).outputs[0]
    assert _error(f, [ACTIVATION_DOMAINS[op_type]((3, 4))], 0, static) < TOL


@pytest.mark.parametrize("axis", [-1, 0])
@pytest.mark.parametrize("fn", [fb.nn.softmax, fb.nn.log_softmax], ids=lambda f: f.__name__)
def test_softmax_gradient(fn, axis):
    v = _uniform(-2, 2, (3, 4))
    assert _error(lambda a: fn(a, axis=axis), [v], 0) < TOL
    assert _error(lambda a: fn(a, axis=axis), [v], 0, static=False) < TOL


def test_softmax_gradient_against_numpy():
    v, g = _uniform(-2, 2, (2, 3)), _uniform(-1, 1, (2, 3))
    sm = np.exp(v) / np.exp(v).sum(-1, keepdims=True)
    x = fb.constant(v)
    with fb.Session() as s:
        got = s.run(_grad(fb.nn.softmax(x), x, g))
        np.testing.assert_allclose(got, (g - (g * sm).sum(-1, keepdims=True)) * sm)
        got = s.run(_grad(fb.nn.log_softmax(x), x, g))
        np.testing.assert_allclose(got, g - g.sum(-1, keepdims=True) * sm)


def test_relu_gradient_masks():
    x = fb.constant([-1.0, 0.5, 7.0, 3.0], F64)
    with fb.Session() as s:
        assert s.run(_grad(fb.nn.relu(x), x)).tolist() == [0.0, 1.0, 1.0, 1.0]
        assert s.run(_grad(fb.nn.relu6(x), x)).tolist() == [0.0, 1.0, 0.0, 1.0]
        np.testing.assert_allclose(s.run(_grad(fb.nn.elu(x), x)), [np.exp(-1.0), 1, 1, 1])


# ------------------------------------------------------------ the machinery
def test_gradients_sum_over_paths():
    x = fb.constant([1.0, -2.0, 3.0], F64)
    with fb.Session() as s:
        assert s.run(_grad(x * x + x, x)).tolist() == [3.0, -3.0, 7.0]


def test_unrelated_gives_none():
    x, unrelated = fb.constant(2.0, F64), fb.constant(5.0, F64)
    assert fb.gradients(x * x, [unrelated]) == [None]


def test_stop_gradient_stops_the_flow():
    x = fb.constant([1.0, 2.0], F64)
    y = x * fb.stop_gradient(x * 3.0)
    with fb.Session() as s:
        assert s.run(_grad(y, x)).tolist() == [3.0, 6.0]
    assert fb.gradients(fb.stop_gradient(x), [x]) == [None]


def test_stop_gradients_argument():
    x = fb.constant(2.0, F64)
    h = x * x
    (g,) = fb.gradients(h * x, [x], stop_gradients=[h])
    with fb.Session() as s:
        assert float(s.run(g)) == 4.0


def test_gradient_ops_live_under_the_gradients_scope():
    x = fb.constant([1.0, 2.0], F64)
    g = _grad(fb.reduce_sum(fb.exp(x)), x)
    assert g.op.name.startswith("gradients/")

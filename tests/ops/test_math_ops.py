"""Math, reduction, matrix and nn ops, checked against numpy as tables over the registry.

Every case checks the value, the dtype, and that the runtime shape is the static
shape ``infer`` promised (and agrees with it where dims were unknown).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import flowbook as fb
from flowbook.framework import dtypes
from flowbook.framework.registry import OPS
from flowbook.framework.tensor_shape import compatible
from flowbook.ops.math import math_ops, reduction_ops
from flowbook.ops.nn import nn_ops
from tests.ops import test_special_ops

RNG = np.random.default_rng(0)
TEST_DTYPES = [
    dtypes.float16,
    dtypes.float32,
    dtypes.float64,
    dtypes.int32,
    dtypes.int64,
    dtypes.uint8,
    dtypes.bool,
    dtypes.complex64,
]
SHAPE_PAIRS = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1), (1, 5)), ((), (2, 2)), ((), ())]
RTOL = {"float16": 2e-3, "float32": 1e-5, "complex64": 1e-5}

# op type -> (numpy reference, (low, high) of the inputs' values)
BINARY_REF = {
    "Add": (lambda a, b: a + b, (-3, 3)),
    "Sub": (lambda a, b: a - b, (-3, 3)),
    "Mul": (lambda a, b: a * b, (-3, 3)),
    "RealDiv": (lambda a, b: a / b, (1, 4)),
    "FloorDiv": (lambda a, b: a // b, (1, 9)),
    "FloorMod": (lambda a, b: a % b, (1, 9)),
    "Pow": (lambda a, b: a**b, (1, 3)),
    "Maximum": (np.maximum, (-3, 3)),
    "Minimum": (np.minimum, (-3, 3)),
    "SquaredDifference": (lambda a, b: np.square(np.subtract(a, b)), (-3, 3)),  # ufuncs: no warning
    "Less": (lambda a, b: a < b, (-2, 2)),
    "LessEqual": (lambda a, b: a <= b, (-2, 2)),
    "Greater": (lambda a, b: a > b, (-2, 2)),
    "GreaterEqual": (lambda a, b: a >= b, (-2, 2)),
    "Equal": (lambda a, b: a == b, (-2, 2)),
    "NotEqual": (lambda a, b: a != b, (-2, 2)),
    "LogicalAnd": (np.logical_and, (0, 1)),
    "LogicalOr": (np.logical_or, (0, 1)),
    "Atan2": (np.arctan2, (-3, 3)),
    "TruncateDiv": (lambda a, b: np.trunc(a / b).astype(np.result_type(a, b)), (1, 9)),
    "TruncateMod": (np.fmod, (1, 9)),
    "DivNoNan": (lambda a, b: a / b, (1, 4)),
    "NextAfter": (np.nextafter, (-3, 3)),
}
_SPECIAL = (0.5, np.nan, np.inf, -np.inf, -2.0)
UNARY_REF = {
    "Neg": (lambda a: -a, (-3, 3)),
    "Abs": (np.abs, (-3, 3)),
    "Square": (lambda a: a * a, (-3, 3)),
    "Sqrt": (np.sqrt, (0, 4)),
    "Rsqrt": (lambda a: 1 / np.sqrt(a), (1, 4)),
    "Exp": (np.exp, (-3, 3)),
    "Log": (np.log, (1, 4)),
    "Log1p": (np.log1p, (0, 4)),
    "Sigmoid": (lambda a: 1 / (1 + np.exp(-a)), (-5, 5)),
    "Tanh": (np.tanh, (-3, 3)),
    "Sign": (np.sign, (-3, 3)),
    "Reciprocal": (lambda a: 1 / a, (1, 4)),
    "Floor": (np.floor, (-3, 3)),
    "Ceil": (np.ceil, (-3, 3)),
    "Round": (np.round, (-3, 3)),
    "Sin": (np.sin, (-3, 3)),
    "Cos": (np.cos, (-3, 3)),
    "Conj": (np.conj, (-3, 3)),
    "LogicalNot": (np.logical_not, (0, 1)),
    "IsNan": (np.isnan, _SPECIAL),
    "IsInf": (np.isinf, _SPECIAL),
    "IsFinite": (np.isfinite, _SPECIAL),
    "Tan": (np.tan, (-1, 1)),
    "Asin": (np.arcsin, (-0.9, 0.9)),
    "Acos": (np.arccos, (-0.9, 0.9)),
    "Atan": (np.arctan, (-3, 3)),
    "Sinh": (np.sinh, (-3, 3)),
    "Cosh": (np.cosh, (-3, 3)),
    "Asinh": (np.arcsinh, (-3, 3)),
    "Acosh": (np.arccosh, (1, 4)),
    "Atanh": (np.arctanh, (-0.9, 0.9)),
    "Expm1": (np.expm1, (-3, 3)),
    "Rint": (np.rint, (-3, 3)),
    **test_special_ops.UNARY_REF,
}
REDUCE_REF = {
    "Sum": np.sum,
    "Mean": np.mean,
    "Max": np.max,
    "Min": np.min,
    "Prod": np.prod,
    "All": np.all,
    "Any": np.any,
}


@pytest.fixture
def sess():
    graph = fb.Graph()
    with graph.as_default(), fb.Session(graph=graph) as s:
        yield s


def build(op_type: str, *inputs: fb.Tensor) -> fb.Tensor:
    """An op of ``op_type`` straight from the registry, as the wrappers make it."""
    return fb.get_default_graph().create_op(op_type, inputs).outputs[0]


def values(dtype: fb.DType, shape: tuple, domain: tuple) -> np.ndarray:
    """Random test values of ``dtype`` in ``domain``: (low, high), or a tuple of specials."""
    if len(domain) > 2:
        return np.resize(np.array(domain), shape).astype(dtype.np)
    low, high = domain
    if dtype.is_bool:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype.is_integer:
        return RNG.integers(max(low, 0) if dtype.is_unsigned else low, high + 1, shape).astype(
            dtype.np
        )
    v = RNG.uniform(low, high, shape)
    if dtype.is_complex:
        v = v + 1j * RNG.uniform(low, high, shape)
    v = np.where(np.abs(v) < 0.25, 0.5, v) if low < 0 and high > 0 else v  # away from 0
    return v.astype(dtype.np)


def check(
    result: object, tensor: fb.Tensor, expected: np.ndarray, dtype: fb.DType, rtol=0.0
) -> None:
    """Value, dtype and static-vs-runtime shape of one fetched result."""
    got = np.asarray(result)
    assert got.dtype == dtype.np, f"{tensor.op.type}: dtype {got.dtype} != {dtype.name}"
    assert tensor.dtype is dtype
    static = tensor.get_shape().as_tuple()
    assert compatible(static, got.shape), f"static {static} vs runtime {got.shape}"
    if static is not None and None not in static:
        assert got.shape == static
    expected = np.asarray(expected)
    assert got.shape == expected.shape
    if dtype.is_floating or dtype.is_complex:
        rtol = max(rtol, RTOL.get(dtype.name, 1e-12))
        np.testing.assert_allclose(got, expected.astype(got.dtype), rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(got, expected.astype(got.dtype))


def cases(table: list) -> list:
    return [
        pytest.param(row, dt, id=f"{row.op_type}-{dt.name}")
        for row in table
        for dt in TEST_DTYPES
        if dt in row.dtypes
    ]


# ---------------------------------------------------------------- element-wise
def test_every_table_op_has_a_reference_and_is_registered():
    assert {r.op_type for r in math_ops.BINARY} == set(BINARY_REF)
    assert {r.op_type for r in math_ops.UNARY} == set(UNARY_REF)
    assert {r.op_type for r in reduction_ops.REDUCTIONS} == set(REDUCE_REF)
    for op_type in [*BINARY_REF, *UNARY_REF, *REDUCE_REF, "AddV2", "Cast", "MatMul", "AddN"]:
        assert OPS[op_type].kernel is not None
    assert OPS["AddV2"].bound_kernel(np, {}) is np.add


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("row,dtype", cases(math_ops.BINARY))
def test_binary(sess, row, dtype):
    ref, domain = BINARY_REF[row.op_type]
    out_dtype = row.out or dtype
    if isinstance(row.fn, str):  # table rows bind straight to the ufunc
        assert OPS[row.op_type].bound_kernel(np, {}) is getattr(np, row.fn)
    for sx, sy in SHAPE_PAIRS:
        a, b = values(dtype, sx, domain), values(dtype, sy, domain)
        t = build(row.op_type, fb.constant(a), fb.constant(b))
        check(sess.run(t), t, ref(a, b), out_dtype)
    # partly unknown static shapes: the runtime shape must agree with what infer said
    x = fb.placeholder(dtype, [None, 3])
    y = fb.placeholder(dtype, None)
    t = build(row.op_type, x, y)
    a, b = values(dtype, (2, 3), domain), values(dtype, (3,), domain)
    check(sess.run(t, {x: a, y: b}), t, ref(a, b), out_dtype)
    assert t.get_shape().as_tuple() is None  # unknown rank broadcasts to unknown


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("row,dtype", cases(math_ops.UNARY))
def test_unary(sess, row, dtype):
    ref, domain = UNARY_REF[row.op_type]
    rtol = test_special_ops.RTOL.get(row.op_type, 0.0)  # approximations' float64 accuracy
    for shape in [(2, 3), (), (5,)]:
        a = values(dtype, shape, domain)
        t = build(row.op_type, fb.constant(a))
        check(sess.run(t), t, ref(a), row.out or dtype, rtol)
    x = fb.placeholder(dtype, [None, 2])
    t = build(row.op_type, x)
    a = values(dtype, (3, 2), domain)
    check(sess.run(t, {x: a}), t, ref(a), row.out or dtype, rtol)


@pytest.mark.parametrize("name", sorted(set(math_ops.__all__)))
def test_public_wrappers_have_docs_and_examples(name):
    fn = getattr(math_ops, name)
    assert fn.__doc__ and ">>>" in fn.__doc__, name
    assert getattr(fb, name) is fn


def test_wrappers_build_their_op_type(sess):
    x = fb.constant([1.0, 4.0])
    for row in math_ops.BINARY + math_ops.UNARY:
        for name in row.wrappers:
            dt = next(d for d in (dtypes.float32, dtypes.int32, dtypes.bool) if d in row.dtypes)
            arg = fb.constant(np.ones(2, dt.np))
            args = (arg, arg) if row in math_ops.BINARY else (arg,)
            t = getattr(fb, name, None) or getattr(fb.math, name)  # bessel_i0: tf.math only
            t = t(*args, name=f"my_{name}")
            assert t.op.type == row.op_type and t.op.name == f"my_{name}"
    assert fb.sigmoid(x).op.name == "Sigmoid"


@pytest.mark.filterwarnings("error")
def test_sigmoid_and_friends_are_stable_at_extremes(sess):
    big = fb.constant([-1e4, -100.0, 0.0, 100.0, 1e4])
    sig, sp, elu, sm, lsm = sess.run(
        [
            fb.sigmoid(big),
            fb.nn.softplus(big),
            fb.nn.elu(big),
            fb.nn.softmax(big),
            fb.nn.log_softmax(big),
        ]
    )
    np.testing.assert_allclose(sig, [0, 0, 0.5, 1, 1], atol=1e-30)
    np.testing.assert_allclose(sp, [0, 0, np.log(2), 100, 1e4], rtol=1e-6, atol=1e-30)
    np.testing.assert_allclose(elu, [-1, -1, 0, 100, 1e4])
    np.testing.assert_allclose(sm, [0, 0, 0, 0, 1])
    assert lsm[-1] == 0 and lsm[0] == -2e4
    half = sess.run(fb.sigmoid(fb.constant([-np.inf, -60000.0, 60000.0, np.inf], fb.float16)))
    assert half.dtype == np.float16 and half.tolist() == [0.0, 0.0, 1.0, 1.0]


# ------------------------------------------------------------ python operands
def test_python_values_take_the_tensor_dtype(sess):
    x = fb.constant([1.0, 2.0], fb.float64)
    assert fb.add(x, 2).dtype is dtypes.float64
    assert fb.multiply(3, x).dtype is dtypes.float64
    i = fb.constant([1, 2], fb.int64)
    assert fb.maximum(i, 0).dtype is dtypes.int64
    assert sess.run(fb.subtract(10, i)).tolist() == [9, 8]
    with pytest.raises(TypeError, match=r"Expected int64, got 2\.5"):
        fb.add(i, 2.5)


def test_mismatched_dtypes_raise_like_tensorflow():
    with fb.Graph().as_default():
        x, y = fb.constant(1.0), fb.constant(1)
        msg = (
            "Input 'y' of 'Add' Op has type int32 that does not match type float32 of argument 'x'."
        )
        with pytest.raises(TypeError, match=re.escape(msg)):
            fb.add(x, y)
        with pytest.raises(TypeError, match="'Less' Op has type float64"):
            fb.less(fb.constant([1.0]), np.array([2.0]))  # numpy values keep their dtype
        with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
            fb.sqrt(fb.constant([4]))
        with pytest.raises(TypeError, match="DataType float32 not in list"):
            fb.logical_and(x, x)
        with pytest.raises(ValueError, match=r"Dimensions must be equal or 1, but are 3 and 4"):
            fb.add(fb.zeros([2, 3]), fb.zeros([4]))
        assert len(fb.get_default_graph().get_operations()) == 7  # failed ops left no trace


# ------------------------------------------------------------------ division
def test_division_family(sess):
    i8, i32 = fb.constant([7, -7], fb.int8), fb.constant([7, -7])
    f = fb.constant([7.0, -7.0])
    cases_ = [
        (fb.truediv(i32, 2), [3.5, -3.5], dtypes.float64),
        (fb.truediv(i8, 2), [3.5, -3.5], dtypes.float32),
        (fb.divide(f, 2), [3.5, -3.5], dtypes.float32),
        (fb.div(i32, 2), [3, -4], dtypes.int32),
        (fb.div(f, 2), [3.5, -3.5], dtypes.float32),
        (fb.floordiv(f, 2), [3.0, -4.0], dtypes.float32),
        (fb.mod(i32, 3), [1, 2], dtypes.int32),
        (fb.floormod(f, -3), [-2.0, -1.0], dtypes.float32),
        (fb.realdiv(f, 2), [3.5, -3.5], dtypes.float32),
        (fb.scalar_mul(2, i32), [14, -14], dtypes.int32),
        (fb.logical_xor([True, True, False], [True, False, False]), [False, True, False], fb.bool),
        (fb.round([0.5, 1.5, 2.5, -0.5]), [0.0, 2.0, 2.0, -0.0], dtypes.float32),
    ]
    for t, want, dt in cases_:
        check(sess.run(t), t, np.array(want), dt)
    assert fb.truediv(i32, 2).op.name == "truediv_3"
    assert fb.round(i32) is i32 and fb.conj(f) is f
    with pytest.raises(TypeError, match="x and y must have the same dtype"):
        fb.truediv(f, fb.constant(2))
    with pytest.raises(ValueError, match="Only scalar multiply"):
        fb.scalar_mul([1.0, 2.0], f)


# ----------------------------------------------------------------------- Cast
def test_cast(sess):
    f = fb.constant([1.7, -1.7, 0.0])
    assert fb.cast(f, fb.float32) is f
    cases_ = [
        (fb.cast(f, fb.int32), [1, -1, 0], dtypes.int32),
        (fb.cast(f, "bool"), [True, True, False], dtypes.bool),
        (fb.cast([True, False], fb.float64), [1.0, 0.0], dtypes.float64),
        (fb.cast(fb.constant([1 + 2j]), fb.float32), [1.0], dtypes.float32),
        (fb.to_float(fb.constant([1, 2])), [1.0, 2.0], dtypes.float32),
        (fb.to_double(f), [1.7, -1.7, 0.0], dtypes.float64),
        (fb.to_int32(f), [1, -1, 0], dtypes.int32),
        (fb.to_int64(f), [1, -1, 0], dtypes.int64),
        (fb.saturate_cast([-5, 300], fb.uint8), [0, 255], dtypes.uint8),
    ]
    for t, want, dt in cases_:
        got = sess.run(t)
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert got.dtype == dt.np and t.dtype is dt
    assert fb.to_float(fb.constant([1])).op.name == "ToFloat_1"


# ------------------------------------------------------------------ reductions
AXES = [None, 0, 1, -1, [0, 2], [], [-1, 0, 1]]


@pytest.mark.parametrize("row", reduction_ops.REDUCTIONS, ids=lambda r: r.op_type)
def test_reductions(sess, row):
    dts = [dtypes.bool] if dtypes.bool in row.dtypes else [dtypes.float32, dtypes.int32]
    ref = REDUCE_REF[row.op_type]
    for dt in dts:
        a = values(dt, (2, 3, 4), (1, 3) if row.op_type == "Prod" else (-5, 5))
        x = fb.constant(a)
        for axis in AXES:
            for keepdims in (False, True):
                t = getattr(fb, row.wrapper)(x, axis=axis, keepdims=keepdims)
                np_axis = None if axis is None else tuple(np.atleast_1d(axis))
                want = ref(a.astype(np.float64) if dt.is_integer else a, np_axis, keepdims=keepdims)
                want = np.trunc(want) if row.op_type == "Mean" and dt.is_integer else want
                check(sess.run(t), t, want, dt)


def test_reduction_arguments_and_static_shapes(sess):
    x = fb.placeholder(fb.float32, [None, 3])
    axis = fb.placeholder(fb.int32, [])
    assert fb.reduce_sum(x, reduction_indices=0).shape.as_list() == [3]
    assert fb.reduce_mean(x, 1, keep_dims=True).shape.as_list() == [None, 1]
    assert fb.reduce_max(x, axis).get_shape().as_tuple() is None
    t = fb.reduce_min(x, axis, keepdims=True)
    assert t.shape.as_list() == [None, None]
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    check(sess.run(t, {x: a, axis: 1}), t, a.min(1, keepdims=True), dtypes.float32)
    assert fb.reduce_sum(x).op.inputs[1].op.type == "Const"
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'reduction_indices'"):
        fb.reduce_sum(x, axis=0, reduction_indices=0)
    with pytest.raises(ValueError, match="Cannot specify both 'keepdims' and 'keep_dims'"):
        fb.reduce_sum(x, keepdims=True, keep_dims=True)
    with pytest.raises(ValueError, match=r"Sum 'Sum_2'.*Invalid reduction dimension 2"):
        fb.reduce_sum(x, 2)
    with pytest.raises(TypeError, match="DataType float32 not in list"):
        fb.reduce_all(x)
    assert sess.run(fb.reduce_mean([-3, -4, 4])) == -1  # integer mean truncates toward zero


def test_reduce_unknown_rank_uses_range_of_rank(sess):
    x = fb.placeholder(fb.float32, None)
    t = fb.reduce_sum(x)
    assert t.op.inputs[1].op.type == "Range" and t.get_shape().as_tuple() is None
    assert sess.run(t, {x: np.ones((2, 3, 4), np.float32)}) == 24.0


@pytest.mark.parametrize("fn,ref", [(fb.argmax, np.argmax), (fb.argmin, np.argmin)])
def test_argmax_argmin(sess, fn, ref):
    a = RNG.permutation(24).reshape(2, 3, 4).astype(np.float32)
    x = fb.constant(a)
    for axis in (None, 0, 1, -1):
        for out in (dtypes.int64, dtypes.int32):
            t = fn(x, axis=axis, output_type=out)
            check(sess.run(t), t, ref(a, axis=axis or 0), out)
    assert fn(x, dimension=2).shape.as_list() == [2, 3]
    assert fn(fb.placeholder(fb.float32, [None, 5]), fb.placeholder(fb.int32)).shape.ndims == 1
    with pytest.raises(ValueError, match="Invalid reduction dimension 3"):
        fn(x, 3)


def test_add_n(sess):
    a = [np.full((2, 2), i, np.float32) for i in range(4)]
    t = fb.add_n([fb.constant(v) for v in a])
    check(sess.run(t), t, sum(a), dtypes.float32)
    assert fb.add_n([fb.constant(1.0)]).op.type == "Const"
    assert sess.run(fb.add_n([fb.constant([1, 2]), [3, 4]])).tolist() == [4, 6]
    with pytest.raises(TypeError, match="AddN inputs must have one dtype"):
        fb.add_n([fb.constant(1.0), fb.constant(1)])
    with pytest.raises(ValueError, match=r"one shape: \[2\] vs inputs\[1\]\[3\]"):
        fb.add_n([fb.zeros([2]), fb.zeros([3])])


# -------------------------------------------------------------------- matrices
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("dtype", [dtypes.float32, dtypes.float64, dtypes.int32])
def test_matmul(sess, ta, tb, dtype):
    a, b = values(dtype, (3, 4), (-3, 3)), values(dtype, (4, 5), (-3, 3))
    a_in, b_in = (a.T if ta else a), (b.T if tb else b)
    t = fb.matmul(a_in, b_in, transpose_a=ta, transpose_b=tb)
    assert t.op.type == "MatMul" and t.shape.as_list() == [3, 5]
    check(sess.run(t), t, a.astype(np.float64) @ b, dtype)
    x = fb.placeholder(dtype, [None, 4] if not ta else [4, None])
    t = fb.matmul(x, b_in, transpose_a=ta, transpose_b=tb)
    assert t.shape.as_list() == [None, 5]
    check(sess.run(t, {x: a_in}), t, a.astype(np.float64) @ b, dtype)


def test_batch_matmul_and_adjoint(sess):
    a = values(dtypes.float32, (2, 3, 4), (-1, 1))
    b = values(dtypes.float32, (4, 5), (-1, 1))
    t = fb.matmul(a, b)
    assert t.op.type == "BatchMatMulV2" and t.shape.as_list() == [2, 3, 5]
    check(sess.run(t), t, a @ b, dtypes.float32)
    t = fb.matmul(b, a, transpose_a=True, transpose_b=True)
    check(sess.run(t), t, b.T @ np.swapaxes(a, 1, 2), dtypes.float32)
    c = values(dtypes.complex64, (3, 3), (-1, 1))
    for kw, want in [
        ({"adjoint_a": True}, c.conj().T @ c),
        ({"transpose_a": True}, c.T @ c),
        ({"adjoint_b": True}, c @ c.conj().T),
    ]:
        t = fb.matmul(c, c, **kw)
        check(sess.run(t), t, want, dtypes.complex64)
        t = fb.matmul(c[None], c[None], **kw)
        check(sess.run(t), t, want[None], dtypes.complex64)


def test_matmul_build_errors_name_the_op_and_shapes():
    with fb.Graph().as_default():
        x, w = fb.placeholder(fb.float32, [32, 784]), fb.placeholder(fb.float32, [100, 10])
        with pytest.raises(ValueError) as e:
            fb.matmul(x, w, name="layer1")
        msg = str(e.value)
        assert msg.startswith("MatMul 'layer1' (") and "test_math_ops.py:" in msg
        assert "inner dimensions differ (784 vs 100), a[32,784] @ b[100,10]" in msg
        with pytest.raises(ValueError, match=r"a\[32,784\]\^T @ b\[100,10\]"):
            fb.matmul(x, w, transpose_a=True)
        with pytest.raises(ValueError, match="inner dimensions differ"):
            fb.matmul(fb.zeros([2, 3, 4]), fb.zeros([5, 6]))
        with pytest.raises(ValueError, match="must be rank 2 but is rank 1"):
            fb.get_default_graph().create_op("MatMul", [fb.zeros([3]), fb.zeros([3, 1])])
        with pytest.raises(TypeError, match="'b' of 'MatMul' Op has type int32"):
            fb.matmul(x, fb.constant([[1]]))


def test_matmul_heavy_by_static_flops():
    with fb.Graph().as_default():
        small = fb.matmul(fb.zeros([8, 8]), fb.zeros([8, 8])).op
        big = fb.matmul(fb.zeros([64, 64]), fb.zeros([64, 64])).op
        unknown = fb.matmul(fb.placeholder(fb.float32, [None, 8]), fb.zeros([8, 8])).op
        inv_small = fb.matrix_inverse(np.eye(4)).op
        assert not small._opdef.is_heavy(small) and big._opdef.is_heavy(big)
        assert unknown._opdef.is_heavy(unknown) and not inv_small._opdef.is_heavy(inv_small)


def test_matrix_inverse_and_determinant(sess):
    m = values(dtypes.float64, (3, 4, 4), (-1, 1)) + 4 * np.eye(4)
    inv, det = fb.matrix_inverse(m), fb.matrix_determinant(m)
    assert inv.shape.as_list() == [3, 4, 4] and det.shape.as_list() == [3]
    check(sess.run(inv), inv, np.linalg.inv(m), dtypes.float64)
    check(sess.run(det), det, np.linalg.det(m), dtypes.float64)
    t = fb.matrix_inverse(m, adjoint=True)
    check(sess.run(t), t, np.linalg.inv(np.swapaxes(m, 1, 2)), dtypes.float64)
    d = fb.matrix_determinant(m[0].astype(np.float32))
    check(sess.run(d), d, np.linalg.det(m[0]), dtypes.float32)
    with pytest.raises(ValueError, match=r"needs square matrices, got input\[2,3\]"):
        fb.matrix_inverse(np.zeros((2, 3)))
    with pytest.raises(fb.errors.InvalidArgumentError, match="not invertible"):
        sess.run(fb.matrix_inverse(np.zeros((2, 2))))


# -------------------------------------------------------------------------- nn
ACT_REF = {
    "Relu": lambda a: np.maximum(a, 0),
    "Relu6": lambda a: np.clip(a, 0, 6),
    "Elu": lambda a: np.where(a > 0, a, np.expm1(np.minimum(a, 0))),
    "Softplus": lambda a: np.log1p(np.exp(a)),
    # Selu and Softsign from their papers' formulas (the constants of Klambauer et al. 2017)
    "Selu": lambda a: 1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 * np.expm1(a)),
    "Softsign": lambda a: a / (1 + np.abs(a)),
}


@pytest.mark.parametrize(
    "op_type,dtype",
    [
        pytest.param(row.op_type, dt, id=f"{row.op_type}-{dt.name}")
        for row in nn_ops.ACTIVATIONS
        for dt in (dtypes.float32, dtypes.float64, dtypes.int32)
        if dt in row.dtypes
    ],
)
def test_activations(sess, op_type, dtype):
    a = values(dtype, (3, 4), (-8, 8))
    t = getattr(fb.nn, op_type.lower())(a)
    assert t.op.type == op_type
    check(sess.run(t), t, ACT_REF[op_type](a.astype(np.float64)), dtype)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(sess, axis):
    a = values(dtypes.float32, (3, 4), (-5, 5))
    e = np.exp(a.astype(np.float64) - a.max(axis, keepdims=True))
    want = e / e.sum(axis, keepdims=True)
    sm, lsm = fb.nn.softmax(a, axis=axis), fb.nn.log_softmax(a, dim=axis)
    check(sess.run(sm), sm, want, dtypes.float32)
    check(sess.run(lsm), lsm, np.log(want), dtypes.float32)
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        fb.nn.softmax(a, axis=2)
    with pytest.raises(ValueError, match="Cannot specify both"):
        fb.nn.softmax(a, axis=0, dim=0)

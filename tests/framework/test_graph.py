"""The graph model: names and scopes, lookups, control and device scopes, dtypes, shapes."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb
from flowbook.framework import dtypes
from flowbook.framework.tensor_shape import TensorShape


def test_tensor_and_op_basics():
    c = fb.constant([[1.0, 2.0]], name="c")
    assert c.name == "c:0"
    assert c.op.name == "c" and c.op.type == "Const"
    assert c.dtype is fb.float32
    assert c.get_shape().as_list() == [1, 2]
    assert c.op.outputs == (c,)
    assert c.graph is fb.get_default_graph()
    assert c.op.site.line > 0 and c.op.site.file.endswith("test_graph.py")


def test_name_uniquifying_follows_tensorflow():
    g = fb.get_default_graph()
    with fb.name_scope("layer1"):
        a = fb.constant(1.0)
        m1 = fb.multiply(a, a)
        m2 = fb.multiply(a, a)
    with fb.name_scope("layer1"):
        b = fb.constant(2.0)
    assert [a.op.name, m1.op.name, m2.op.name] == ["layer1/Const", "layer1/Mul", "layer1/Mul_1"]
    assert b.op.name == "layer1_1/Const"
    with fb.name_scope("layer1/"):  # re-entering an exact scope
        c = fb.constant(3.0, name="c")
    assert c.op.name == "layer1/c"
    with fb.name_scope("outer"), fb.name_scope("inner"):
        d = fb.constant(0, name="d")
    assert d.op.name == "outer/inner/d"
    assert g.unique_name("layer1") == "layer1_2"


def test_name_scope_yields_scope_string_usable_as_op_name():
    with fb.name_scope("loss") as scope:
        assert scope == "loss/"
        t = fb.add(fb.constant(1.0), 2.0, name=scope)
    assert t.op.name == "loss"


def test_lookups_by_name():
    g = fb.get_default_graph()
    x = fb.placeholder(fb.float32, [None, 3], name="x")
    assert g.get_tensor_by_name("x:0") is x
    assert g.get_operation_by_name("x") is x.op
    with pytest.raises(KeyError, match="does not exist"):
        g.get_tensor_by_name("y:0")
    with pytest.raises(KeyError, match="only has 1 outputs"):
        g.get_tensor_by_name("x:1")
    with pytest.raises(ValueError, match="Tensor names must be of the form"):
        g.get_tensor_by_name("x")
    with pytest.raises(KeyError, match="not in the graph"):
        g.get_operation_by_name("nothing")
    assert [op.name for op in g.get_operations()] == ["x"]


def test_version_counts_changes_and_finalize_freezes():
    g = fb.Graph()
    with g.as_default():
        v0 = g.version
        fb.constant(1)
        assert g.version == v0 + 1
        g.finalize()
        with pytest.raises(RuntimeError, match="finalized"):
            fb.constant(2)
    assert len(g.get_operations()) == 1


def test_default_graph_stack_and_reset():
    g = fb.Graph()
    outer = fb.get_default_graph()
    with g.as_default():
        assert fb.get_default_graph() is g
        with pytest.raises(AssertionError):
            fb.reset_default_graph()
    assert fb.get_default_graph() is outer
    fb.reset_default_graph()
    assert fb.get_default_graph() is not outer


def test_mixing_graphs_is_a_clear_error():
    g1, g2 = fb.Graph(), fb.Graph()
    with g1.as_default():
        a = fb.constant(1.0)
    with g2.as_default(), pytest.raises(ValueError, match="same graph"):
        fb.add(a, fb.constant(1.0))


def test_control_dependencies():
    a = fb.constant(1.0, name="a")
    b = fb.constant(2.0, name="b")
    with fb.control_dependencies([a]):
        c = fb.add(b, b)
        d = fb.identity(c)  # its input c already waits for a
        with fb.control_dependencies(None):
            e = fb.constant(3.0)
        with fb.control_dependencies([b.op]):
            f = fb.constant(4.0)
    assert a.op in c.op.control_inputs
    assert d.op.control_inputs == []
    assert e.op.control_inputs == []
    assert set(f.op.control_inputs) == {a.op, b.op}


def test_device_scopes_merge_like_tensorflow():
    with fb.device("/job:ps/task:0"):
        with fb.device("/cpu:0"):
            a = fb.constant(1.0)
        b = fb.constant(2.0)
    with fb.device("/gpu:1"):
        c = fb.constant(3.0)
    with fb.device(lambda op: "/cpu:0" if op.type == "Const" else ""):
        d = fb.constant(4.0)
    assert a.device == "/job:ps/task:0/device:CPU:0"
    assert b.device == "/job:ps/task:0"
    assert c.device == "/device:GPU:1"
    assert d.device == "/device:CPU:0"
    with pytest.raises(ValueError, match="device specification"), fb.device("/nonsense:x"):
        pass


def test_collections():
    g = fb.get_default_graph()
    fb.add_to_collection("things", 1)
    g.add_to_collections(["a", "b"], 2)
    assert fb.get_collection("things") == [1]
    assert g.get_collection("a") == [2] == g.get_collection("b")
    v = fb.Variable(1.0, name="v")
    w = fb.Variable(2.0, name="w", trainable=False)
    assert fb.global_variables() == [v, w]
    assert fb.trainable_variables() == [v]
    assert fb.get_collection(fb.GraphKeys.GLOBAL_VARIABLES, scope="w") == [w]


@pytest.mark.parametrize("dtype", dtypes.ALL, ids=lambda d: d.name)
def test_dtype_table_maps_to_numpy(dtype):
    assert fb.as_dtype(dtype.name) is dtype
    assert fb.as_dtype(dtype.np) is dtype
    assert fb.as_dtype(dtype.as_numpy_dtype) is dtype


def test_whitepaper_dtypes_present_and_python_values_get_tf_defaults():
    for name in [
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "bool",
        "string",
        "complex64",
    ]:
        assert isinstance(getattr(fb, name), fb.DType)
    assert fb.constant(1.5).dtype is fb.float32
    assert fb.constant(1).dtype is fb.int32
    assert fb.constant(2**40).dtype is fb.int64
    assert fb.constant(np.zeros(2)).dtype is fb.float64
    assert fb.constant(True).dtype is fb.bool
    assert fb.float32.is_floating and fb.int32.is_integer and not fb.int32.is_floating


def test_tensor_shape():
    s = TensorShape([None, 784])
    assert s.as_list() == [None, 784]
    assert s.ndims == 2 and s[1].value == 784 and s[0].value is None
    assert not s.is_fully_defined()
    assert s.is_compatible_with([32, 784]) and not s.is_compatible_with([32, 10])
    assert s.merge_with([32, None]).as_list() == [32, 784]
    assert TensorShape(None).ndims is None
    with pytest.raises(ValueError):
        TensorShape(None).as_list()
    assert str(s) == "(?, 784)"
    x = fb.placeholder(fb.float32, [None, 3])
    assert x.get_shape().as_list() == [None, 3]
    x.set_shape([5, 3])
    assert x.shape.as_list() == [5, 3]
    with pytest.raises(ValueError, match="not compatible"):
        x.set_shape([4, 3])


def test_build_time_shape_error_names_op_and_line_and_leaves_graph_unchanged():
    g = fb.get_default_graph()
    a = fb.placeholder(fb.float32, [32, 784], name="a")
    b = fb.placeholder(fb.float32, [100, 10], name="b")
    before = (g.version, len(g.get_operations()))
    with fb.name_scope("layer1"), pytest.raises(ValueError) as info:
        fb.matmul(a, b)
    message = str(info.value)
    assert "MatMul 'layer1/MatMul'" in message and "test_graph.py" in message
    assert "784" in message and "100" in message
    assert (g.version, len(g.get_operations())) == before
    # the failed op's name was not taken
    with fb.name_scope("layer1/"):
        assert fb.matmul(b, fb.ones([10, 2])).op.name == "layer1/MatMul"


def test_dtype_mismatch_is_a_type_error_at_build_time():
    with pytest.raises(TypeError, match="Add"):
        fb.add(fb.constant(1.0), fb.constant(1))


def test_tensor_refuses_bool_and_array_conversion():
    x = fb.placeholder(fb.float32, name="x")
    with pytest.raises(TypeError, match="symbolic tensor 'x:0'"):
        bool(x)
    with pytest.raises(TypeError, match=r"sess\.run"):
        np.asarray(x)
    assert {x: 1}[x] == 1  # hashable, identity equality: usable as a feed key


def test_python_operators_build_tf_named_ops():
    x = fb.constant(2.0, name="x")
    y = 3 * x + 1
    assert y.op.name == "add" and y.op.type == "Add"
    assert y.op.inputs[1].op.name == "add/y"
    assert y.op.inputs[0].op.name == "mul" and y.op.inputs[0].op.inputs[0].op.name == "mul/x"
    ops = {
        "Sub": x - 1, "RealDiv": x / 2, "FloorDiv": x // 2, "FloorMod": x % 2, "Pow": x**2,
        "Neg": -x, "Abs": abs(x), "Less": x < 1, "LessEqual": x <= 1, "Greater": x > 1,
        "GreaterEqual": x >= 1,
    }  # fmt: skip
    for op_type, t in ops.items():
        assert t.op.type == op_type
    m = fb.constant(np.eye(2, dtype=np.float32))
    assert (m @ m).op.type == "MatMul"
    b = fb.constant(True)
    assert (b & b).op.type == "LogicalAnd" and (~b).op.type == "LogicalNot"


@pytest.mark.parametrize("name", ["^x", "a:0", "a\nb", "has space", "_lead", "-x", "<b>", ""])
def test_op_names_follow_tensorflows_rule(name):
    g = fb.Graph()
    with g.as_default():
        if name == "":
            assert fb.constant(1.0, name=name).op.name == "Const"  # empty: the default name
            return
        with pytest.raises(ValueError, match="is not a valid op name") as info:
            fb.constant(1.0, name=name)
    assert "Const" in str(info.value) and "test_graph.py" in str(info.value)
    assert g.get_operations() == [] and g.unique_name("Const") == "Const"  # nothing taken


@pytest.mark.parametrize("name", ["a.b-c/d>e", "x_1", "9lives", ".hidden"])
def test_valid_names_pass(name):
    with fb.Graph().as_default():
        assert fb.constant(1.0, name=name).op.name == name


def test_scope_names_follow_tensorflows_rule():
    with fb.Graph().as_default():
        with fb.name_scope("outer"), fb.name_scope("_inner"):  # "_" may start an inner scope
            assert fb.constant(1.0, name="c").op.name == "outer/_inner/c"
        with (
            pytest.raises(ValueError, match="'layer 1' is not a valid name scope"),
            fb.name_scope("layer 1"),
        ):
            pass
        with (
            pytest.raises(ValueError, match="'_top' is not a valid name scope at the top"),
            fb.name_scope("_top"),
        ):
            pass

"""``tf.data``'s option objects, cardinality constants, ``DatasetSpec``, ``NumpyIterator``
and ``get_output_classes``, as TensorFlow 1 behaves."""

from __future__ import annotations

import pytest

import flowbook as tf


def test_cardinality_constants():
    assert (tf.data.INFINITE_CARDINALITY, tf.data.UNKNOWN_CARDINALITY) == (-1, -2)


def test_options_defaults_and_unknown_attribute():
    o = tf.data.Options()
    assert o.deterministic is None and o.threading.private_threadpool_size is None
    assert isinstance(o.threading, tf.data.ThreadingOptions)
    assert o.experimental_threading is o.threading
    with pytest.raises(AttributeError, match="Cannot set the property foo on Options"):
        o.foo = 1
    with pytest.raises(AttributeError):
        o.threading.foo = 1


@pytest.mark.parametrize(
    ("group", "key", "bad"),
    [
        ("threading", "private_threadpool_size", "x"),
        ("threading", "max_intra_op_parallelism", 1.5),
        (None, "deterministic", 1),
        ("experimental_optimization", "map_fusion", "yes"),
    ],
)
def test_options_check_types(group, key, bad):
    o = tf.data.Options()
    target = o if group is None else getattr(o, group)
    with pytest.raises(TypeError, match=f'Property "{key}" must be of type'):
        setattr(target, key, bad)


def test_options_merge_later_wins_and_keeps_the_rest():
    a, b = tf.data.Options(), tf.data.Options()
    a.threading.private_threadpool_size = 4
    a.deterministic = True
    b.deterministic = False
    m = a.merge(b)
    assert (m.threading.private_threadpool_size, m.deterministic) == (4, False)
    assert a == a.merge(tf.data.Options()) and a != tf.data.Options()
    a.experimental_deterministic = None
    assert a.deterministic is None


def test_with_options_keeps_elements_and_options_flow_downstream():
    o = tf.data.Options()
    o.threading.private_threadpool_size = 2
    p = tf.data.Options()
    p.experimental_slack = True
    ds = tf.data.Dataset.range(3).with_options(o).map(lambda x: x * 2).with_options(p)
    got = ds.options()
    assert (got.threading.private_threadpool_size, got.experimental_slack) == (2, True)
    assert tf.data.Dataset.range(1).options() == tf.data.Options()
    with tf.Graph().as_default(), tf.Session() as s:
        nxt = ds.make_one_shot_iterator().get_next()
        assert [int(s.run(nxt)) for _ in range(3)] == [0, 2, 4]
    with pytest.raises(TypeError, match="Options"):
        tf.data.Dataset.range(1).with_options({"deterministic": True})


def test_numpy_iterator_and_output_classes():
    ds = tf.data.Dataset.from_tensor_slices(([1, 2], [3.0, 4.0]))
    it = tf.data.NumpyIterator(ds)
    assert iter(it) is it
    assert [(int(a), float(b)) for a, b in it] == [(1, 3.0), (2, 4.0)]
    assert tf.data.get_output_classes(ds) == (tf.Tensor, tf.Tensor)


def test_dataset_spec():
    ds = tf.data.Dataset.range(3)
    spec = tf.data.DatasetSpec.from_value(ds)
    assert spec.element_spec == ds.element_spec
    assert spec.value_type is tf.data.Dataset
    assert spec.is_compatible_with(ds)
    assert spec == tf.data.DatasetSpec(ds.element_spec)
    assert not spec.is_compatible_with(tf.data.Dataset.from_tensor_slices([1.0]))

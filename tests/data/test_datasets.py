"""``tf.data``: datasets read through iterator ops in a Session, checked against plain Python.

Each row of ``PIPELINES`` builds a dataset and gives the elements plain
Python (or numpy) computes for it (and hypothesis draws random chains of
steps, checked against the same steps on a Python list, with chunks made
tiny so every step meets chunk boundaries); the dataset is read through a one-shot
iterator in a Session until ``OutOfRangeError``.  Shuffling cannot match TF's
order bit for bit (TF draws from Philox, flowbook from numpy's PCG64), so
shuffle is held to its properties instead: a permutation, the same for a
seed, a new order per epoch with ``reshuffle_each_iteration``, and TF's
buffer bound (the element at position p is one of the first p + buffer_size).
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbook as tf
from flowbook.data import sources
from flowbook.data.function import Function
from flowbook.data.structure import Spec
from flowbook.framework.errors import DataLossError, FailedPreconditionError, OutOfRangeError

D = tf.data.Dataset


def read_all(dataset, session=None):
    """Every element of ``dataset`` (numpy, nested) through a one-shot iterator."""
    nxt = dataset.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as s:
        while True:
            try:
                out.append(s.run(nxt))
            except OutOfRangeError:
                return out


def plain(values):
    """Nested numpy values as plain Python (lists, ints, floats, bytes)."""
    if isinstance(values, dict):
        return {k: plain(v) for k, v in values.items()}
    if isinstance(values, tuple | list):
        return [plain(v) for v in values]
    return np.asarray(values).tolist()


def _interleaved():
    return D.range(1, 6).interleave(
        lambda x: D.from_tensors(x).repeat(6), cycle_length=2, block_length=4
    )


def _generator():
    for n in range(1, 4):
        yield list(range(n)), n


PIPELINES = [
    ("range", lambda: D.range(5), [0, 1, 2, 3, 4]),
    ("range_step", lambda: D.range(2, 10, 3), [2, 5, 8]),
    ("slices", lambda: D.from_tensor_slices([[1, 2], [3, 4], [5, 6]]), [[1, 2], [3, 4], [5, 6]]),
    ("slices_tuple", lambda: D.from_tensor_slices(([1, 2], [b"a", b"b"])), [[1, b"a"], [2, b"b"]]),
    ("slices_dict", lambda: D.from_tensor_slices({"b": [1, 2], "a": [3.0, 4.0]}),
     [{"a": 3.0, "b": 1}, {"a": 4.0, "b": 2}]),
    ("tensors", lambda: D.from_tensors([1, 2]), [[1, 2]]),
    ("map_vectorized", lambda: D.range(4).map(lambda x: x * 2 + 1), [1, 3, 5, 7]),
    ("map_per_element", lambda: D.from_tensor_slices([[1, 2], [3, 4]]).map(tf.reduce_sum), [3, 7]),
    ("map_tuple", lambda: D.from_tensor_slices(([1, 2], [3, 4])).map(lambda a, b: (b, a * b)),
     [[3, 3], [4, 8]]),
    ("map_dict", lambda: D.range(2).map(lambda x: {"x": x, "y": tf.cast(x, tf.float32) / 2}),
     [{"x": 0, "y": 0.0}, {"x": 1, "y": 0.5}]),
    ("filter", lambda: D.range(10).filter(lambda x: tf.equal(x % 3, 0)), [0, 3, 6, 9]),
    ("filter_per_element", lambda: D.from_tensor_slices([[1, 2], [3, 4], [0, 1]]).filter(
        lambda r: tf.reduce_sum(r) > 2), [[1, 2], [3, 4]]),
    ("batch", lambda: D.range(7).batch(3), [[0, 1, 2], [3, 4, 5], [6]]),
    ("batch_drop", lambda: D.range(7).batch(3, drop_remainder=True), [[0, 1, 2], [3, 4, 5]]),
    ("batch_tuple", lambda: D.from_tensor_slices(([1, 2, 3], [4, 5, 6])).batch(2),
     [[[1, 2], [4, 5]], [[3], [6]]]),
    ("padded_batch", lambda: D.from_generator(lambda: ([7] * n for n in (1, 3, 2)), tf.int32,
     [None]).padded_batch(2, [None]), [[[7, 0, 0], [7, 7, 7]], [[7, 7]]]),
    ("padded_batch_fixed", lambda: D.from_generator(lambda: ([7] * n for n in (1, 2)), tf.int32,
     [None]).padded_batch(2, [4], padding_values=-1), [[[7, -1, -1, -1], [7, 7, -1, -1]]]),
    ("unbatch", lambda: D.range(5).batch(2).unbatch(), [0, 1, 2, 3, 4]),
    ("repeat", lambda: D.range(3).repeat(2), [0, 1, 2, 0, 1, 2]),
    ("repeat_forever_take", lambda: D.range(2).repeat().take(5), [0, 1, 0, 1, 0]),
    ("repeat_empty", lambda: D.range(0).repeat(), []),
    ("take", lambda: D.range(10).take(3), [0, 1, 2]),
    ("take_all", lambda: D.range(3).take(-1), [0, 1, 2]),
    ("skip", lambda: D.range(5).skip(3), [3, 4]),
    ("skip_past_end", lambda: D.range(5).skip(9), []),
    ("skip_all", lambda: D.range(5).skip(-1), []),
    ("prefetch", lambda: D.range(3).prefetch(2), [0, 1, 2]),
    ("cache_repeat", lambda: D.range(3).map(lambda x: x + 1).cache().repeat(2), [1, 2, 3] * 2),
    ("flat_map", lambda: D.range(1, 4).flat_map(lambda x: D.from_tensors(x).repeat(x)),
     [1, 2, 2, 3, 3, 3]),
    ("flat_map_slices", lambda: D.from_tensor_slices([[1, 2], [3, 4]]).flat_map(
        D.from_tensor_slices), [1, 2, 3, 4]),
    # TF's documented example of interleave's order
    ("interleave", _interleaved,
     [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5]),
    ("zip", lambda: D.zip((D.range(3), D.range(10, 20).batch(2))),
     [[0, [10, 11]], [1, [12, 13]], [2, [14, 15]]]),
    ("zip_dict", lambda: D.zip({"a": D.range(2), "b": D.range(5, 9)}),
     [{"a": 0, "b": 5}, {"a": 1, "b": 6}]),
    ("concatenate", lambda: D.range(2).concatenate(D.range(5, 7)), [0, 1, 5, 6]),
    ("enumerate", lambda: D.from_tensor_slices([b"x", b"y"]).enumerate(), [[0, b"x"], [1, b"y"]]),
    ("generator", lambda: D.from_generator(_generator, (tf.int64, tf.int32), ([None], [])),
     [[[0], 1], [[0, 1], 2], [[0, 1, 2], 3]]),
    ("many_chunks", lambda: D.range(9000).batch(4000).map(lambda x: x * 0).map(
        tf.reduce_sum), [0, 0, 0]),
]  # fmt: skip


@pytest.mark.parametrize("build, want", [r[1:] for r in PIPELINES], ids=[r[0] for r in PIPELINES])
def test_pipeline_matches_python(build, want):
    assert plain(read_all(build())) == want


@pytest.mark.parametrize("build, want", [r[1:] for r in PIPELINES], ids=[r[0] for r in PIPELINES])
def test_as_numpy_reads_the_same(build, want):
    assert plain(list(build().as_numpy_iterator())) == want


def test_static_types_and_shapes():
    ds = D.from_tensor_slices((np.zeros((5, 3), np.float32), np.arange(5))).batch(2)
    assert ds.output_types == (tf.float32, tf.int64)
    assert [s.as_list() for s in ds.output_shapes] == [[None, 3], [None]]
    spec = ds.batch(4, drop_remainder=True).element_spec
    assert spec[0].shape.as_list() == [4, None, 3] and spec[1].dtype is tf.int64
    x, y = ds.make_one_shot_iterator().get_next()
    assert x.shape.as_list() == [None, 3] and y.dtype is tf.int64


def test_out_of_range_names_the_iterator_op_and_stays_at_the_end():
    x = D.range(1).make_one_shot_iterator().get_next(name="next_one")
    with tf.Session() as s:
        assert s.run(x) == 0
        for _ in range(2):
            with pytest.raises(
                OutOfRangeError, match=r"IteratorGetNext 'next_one'.*End of sequence"
            ):
                s.run(x)


def test_initializable_iterator_reinitialised_with_new_feeds():
    p = tf.placeholder(tf.float32, [None])
    it = D.from_tensor_slices(p).map(lambda v: v * 10).make_initializable_iterator()
    x = it.get_next()
    with tf.Session() as s:
        with pytest.raises(FailedPreconditionError, match="not been initialized"):
            s.run(x)
        s.run(it.initializer, {p: [1, 2, 3]})
        assert [s.run(x) for _ in range(2)] == [10, 20]
        s.run(it.initializer, {p: [7]})  # back to the start, on the new data
        assert s.run(x) == 70
        with pytest.raises(OutOfRangeError):
            s.run(x)


def test_from_structure_switches_between_datasets():
    train = D.range(100, 103)
    test = D.range(5).batch(1).unbatch()
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    x = it.get_next()
    to_train, to_test = it.make_initializer(train), it.make_initializer(test)
    with tf.Session() as s:
        s.run(to_train)
        assert s.run(x) == 100
        s.run(to_test)
        assert [s.run(x) for _ in range(2)] == [0, 1]
        s.run(to_train)
        assert s.run(x) == 100
    with pytest.raises(TypeError, match="output types"):
        it.make_initializer(D.from_tensors(1.0))


def test_iterator_state_is_per_session_and_shared_by_runs():
    x = D.range(3).make_one_shot_iterator().get_next()
    with tf.Session() as a, tf.Session() as b:
        assert [a.run(x), a.run(x), b.run(x), a.run(x)] == [0, 1, 0, 2]


def test_threads_on_one_session_each_get_distinct_elements():
    x = D.range(2000).make_one_shot_iterator().get_next()
    got: list[int] = []
    with tf.Session() as s:

        def work():
            while True:
                try:
                    got.append(int(s.run(x)))
                except OutOfRangeError:
                    return

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(got) == list(range(2000))


def test_compat_v1_functions():
    ds = D.range(2)
    x = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
    it = tf.compat.v1.data.make_initializable_iterator(ds)
    with tf.Session() as s:
        s.run(it.initializer)
        assert [s.run(x), s.run(it.get_next())] == [0, 0]
    assert tf.compat.v1.data.get_output_types(ds) is tf.int64


# ------------------------------------------------------------------ shuffle
def _order(seed=None, buffer=100, n=20, epochs=1, reshuffle=True, graph_seed=None):
    with tf.Graph().as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        ds = D.range(n).shuffle(buffer, seed=seed, reshuffle_each_iteration=reshuffle)
        return [int(v) for v in read_all(ds.repeat(epochs))]


@pytest.mark.parametrize("buffer", [1, 3, 20, 10000])
def test_shuffle_is_a_permutation_within_tfs_buffer_bound(buffer):
    out = _order(seed=3, buffer=buffer, n=50)
    assert sorted(out) == list(range(50))
    assert all(v < p + buffer for p, v in enumerate(out))  # TF's buffer: a pick of the first p+B
    if buffer == 1:
        assert out == list(range(50))


def test_shuffle_is_deterministic_for_a_seed_and_differs_between_seeds():
    assert _order(seed=1) == _order(seed=1) != _order(seed=2)
    assert _order(graph_seed=5) == _order(graph_seed=5)
    assert _order(seed=1, buffer=4) == _order(seed=1, buffer=4)


def test_shuffle_reshuffles_each_epoch_unless_told_not_to():
    two = _order(seed=1, epochs=2)
    assert sorted(two[:20]) == sorted(two[20:]) == list(range(20)) and two[:20] != two[20:]
    same = _order(seed=1, epochs=2, reshuffle=False)
    assert same[:20] == same[20:]


def test_shuffle_restarts_its_order_when_the_iterator_is_reinitialised():
    it = D.range(30).shuffle(100, seed=4).make_initializable_iterator()
    x = it.get_next()
    with tf.Session() as s:
        s.run(it.initializer)
        first = [int(s.run(x)) for _ in range(30)]
        s.run(it.initializer)
        assert [int(s.run(x)) for _ in range(30)] == first


# ------------------------------------------------------------- functions
ELEMENT = Spec((0, 0), [tf.float32, tf.int64], [(3,), ()])
VECTORIZED = [
    ("cast_div", lambda x, y: (tf.cast(x, tf.float64) / 255.0, y), True),
    ("arith", lambda x, y: (tf.exp(x) * 2.0 - x, y + 1), True),
    ("reduce", lambda x, y: (tf.reduce_sum(x), y), False),
    ("const_vector", lambda x, y: (x + tf.constant([1.0, 2.0, 3.0]), y), False),
    ("mix_components", lambda x, y: (x * tf.cast(y, tf.float32), y), False),
    ("constant_out", lambda x, y: (x, tf.constant(1)), False),
    ("random", lambda x, y: (x + tf.random_uniform([3]), y), False),
]  # fmt: skip


@pytest.mark.parametrize(
    "fn, vectorized", [r[1:] for r in VECTORIZED], ids=[r[0] for r in VECTORIZED]
)
def test_chunked_map_is_used_only_where_it_equals_per_element(fn, vectorized):
    f = Function(fn, ELEMENT, "map")
    f.as_element()
    assert f.compile().runner().vectorized is vectorized
    if not vectorized:
        return
    rng = np.random.default_rng(0)
    xs, ys = rng.random((6, 3), dtype=np.float32), np.arange(6)
    chunked = list(
        D.from_tensor_slices((xs, ys)).map(fn).as_numpy_iterator()
    )  # one run for all six
    reference = Function(fn, ELEMENT, "map")
    reference.as_element()
    compiled = reference.compile()
    compiled.vectorizable = False  # the reference: element by element
    one_by_one = compiled.runner()
    for i, (a, b) in enumerate(chunked):
        want = one_by_one.call([xs[i], ys[i]])
        np.testing.assert_allclose(a, want[0], rtol=1e-6)
        assert a.dtype == want[0].dtype and b == want[1]


def test_a_function_cannot_reach_into_the_outer_graph():
    outer = tf.constant(2.0)
    with pytest.raises(ValueError, match=r"map: .*same graph.*outer graph"):
        D.range(3).map(lambda x: tf.cast(x, tf.float32) * outer)


def test_random_ops_in_map_follow_the_seeds():
    def draws():
        with tf.Graph().as_default():
            tf.set_random_seed(7)
            ds = D.range(4).map(lambda x: tf.random_uniform([]) + tf.cast(x, tf.float32))
            return [float(v) for v in read_all(ds)]

    a, b = draws(), draws()
    assert a == b and len(set(np.round(np.array(a) % 1, 6))) == 4


# ------------------------------------------------------------------- files
def test_text_and_tfrecord_datasets(tmp_path):
    lines = tmp_path / "a.txt"
    lines.write_bytes(b"one\r\ntwo\nthree")
    records = str(tmp_path / "r.tfrecord")
    with tf.io.TFRecordWriter(records) as w:
        for r in (b"x", b"", b"zz"):
            w.write(r)
    assert read_all(tf.data.TextLineDataset(str(lines))) == [b"one", b"two", b"three"]
    assert read_all(tf.data.TFRecordDataset([records, records])) == [b"x", b"", b"zz"] * 2
    names = tf.placeholder(tf.string, [None])
    it = tf.data.TFRecordDataset(names).make_initializable_iterator()
    with tf.Session() as s:
        s.run(it.initializer, {names: [records]})
        assert s.run(it.get_next()) == b"x"


def test_compressed_files(tmp_path):
    import gzip

    path = tmp_path / "a.txt.gz"
    with gzip.open(path, "wb") as f:
        f.write(b"a\nb\n")
    assert read_all(tf.data.TextLineDataset(str(path), compression_type="GZIP")) == [b"a", b"b"]


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_corrupt_tfrecord_is_data_loss_naming_file_and_offset(tmp_path, damage):
    path = str(tmp_path / "bad.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        w.write(b"first record")
        w.write(b"second record")
    with open(path, "rb") as f:
        data = bytearray(f.read())
    second = 12 + len(b"first record") + 4  # where the second record starts
    if damage == "flip":
        data[second + 12 + 3] ^= 0xFF  # a byte of the second record's data
    else:
        data = data[:-6]
    with open(path, "wb") as f:
        f.write(bytes(data))
    x = tf.data.TFRecordDataset(path).make_one_shot_iterator().get_next()
    with tf.Session() as s:
        assert s.run(x) == b"first record"
        with pytest.raises(DataLossError, match=f"{os.path.basename(path)}.*offset {second}"):
            s.run(x)


# --------------------------------------------------------------- training
def test_a_model_trained_from_a_dataset_matches_feed_dict_training():
    from flowbook.data.datasets import load_digits

    data = load_digits().train
    xs, ys = data.images[:600], data.labels[:600].astype(np.int64)

    def train(from_dataset):
        with tf.Graph().as_default():
            if from_dataset:
                ds = D.from_tensor_slices((xs, ys)).batch(100).repeat(5)
                x, y = ds.make_one_shot_iterator().get_next()
            else:
                x = tf.placeholder(tf.float32, [None, 64])
                y = tf.placeholder(tf.int64, [None])
            w = tf.Variable(tf.zeros([64, 10]))
            b = tf.Variable(tf.zeros([10]))
            logits = tf.matmul(x, w) + b
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
            step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
            with tf.Session() as s:
                s.run(tf.global_variables_initializer())
                for _ in range(5):
                    for i in range(0, 600, 100):
                        feed = None if from_dataset else {x: xs[i : i + 100], y: ys[i : i + 100]}
                        s.run(step, feed)
                if from_dataset:
                    with pytest.raises(OutOfRangeError):
                        s.run(step)
                wv, bv = s.run([w, b])
        return float(np.mean(np.argmax(xs @ wv + bv, 1) == ys)), wv

    acc_ds, w_ds = train(True)
    acc_fd, w_fd = train(False)
    np.testing.assert_allclose(w_ds, w_fd, rtol=1e-5, atol=1e-6)
    assert acc_ds == acc_fd > 0.8


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "build, message",
    [
        (
            lambda: D.from_generator(lambda: iter([[1], [1, 2]]), tf.int32, [None]).batch(2),
            "Cannot batch tensors with different shapes in component 0",
        ),
        (
            lambda: D.from_generator(lambda: iter([[1, 2]]), tf.int32, [3]),
            r"yielded an element of shape \[2\] where an element of shape \[3\] was expected",
        ),
        (
            lambda: D.from_generator(lambda: iter(["x"]), tf.int32),
            r"component 0 \('x'\) is not int32",
        ),
        (
            lambda: D.from_generator(lambda: iter([[1, 2, 3]]), tf.int32, [None]).padded_batch(
                1, [2]
            ),
            "larger than the padded shape",
        ),
    ],
)
def test_run_time_errors_name_the_iterator_op(build, message):
    x = build().make_one_shot_iterator().get_next()
    with tf.Session() as s, pytest.raises(tf.errors.InvalidArgumentError) as e:
        s.run(x)
    assert "IteratorGetNext 'IteratorGetNext' (" in str(e.value)
    assert e.match(message)


def test_build_time_errors():
    with pytest.raises(ValueError, match="scalar bool"):
        D.range(3).filter(lambda x: x + 1)
    with pytest.raises(TypeError, match="must return a Dataset"):
        D.range(3).flat_map(lambda x: x)
    with pytest.raises(ValueError, match="batch_size must be greater than zero"):
        D.range(3).batch(0)
    with pytest.raises(TypeError, match="not iterable in graph mode"):
        iter(D.range(3))


def test_experimental_transformations():
    exp = tf.data.experimental
    ds = D.range(6).apply(exp.shuffle_and_repeat(10, 2, seed=1))
    out = [int(v) for v in ds.as_numpy_iterator()]
    assert sorted(out[:6]) == sorted(out[6:]) == list(range(6))
    got = D.range(5).apply(exp.map_and_batch(lambda x: x + 1, 2, drop_remainder=True))
    assert plain(list(got.as_numpy_iterator())) == [[1, 2], [3, 4]]
    inter = D.range(2).apply(exp.parallel_interleave(lambda x: D.from_tensors(x).repeat(2), 2))
    assert plain(list(inter.as_numpy_iterator())) == [0, 1, 0, 1]
    assert tf.data.AUTOTUNE == exp.AUTOTUNE == -1


# ------------------------------------------------- random pipelines (hypothesis)
STEPS = st.one_of(
    st.tuples(st.just("take"), st.integers(-1, 12)),
    st.tuples(st.just("skip"), st.integers(-1, 12)),
    st.tuples(st.just("repeat"), st.integers(0, 3)),
    st.tuples(st.just("filter"), st.integers(2, 4)),
    st.tuples(st.just("map"), st.integers(1, 3)),
    st.tuples(st.just("rebatch"), st.integers(1, 5), st.booleans()),
    st.tuples(st.just("zip_self"), st.integers(0, 3)),
)


def _apply(ds, items, step):
    """One step on the dataset and on the plain Python list of its elements."""
    kind, n = step[0], step[1]
    if kind == "take":
        return ds.take(n), items if n < 0 else items[:n]
    if kind == "skip":
        return ds.skip(n), [] if n < 0 else items[n:]
    if kind == "repeat":
        return ds.repeat(n), items * n
    if kind == "filter":
        return ds.filter(lambda x: tf.not_equal(x % n, 0)), [x for x in items if x % n]
    if kind == "map":
        return ds.map(lambda x: x * n + 1), [x * n + 1 for x in items]
    if kind == "rebatch":  # batch then unbatch: the same elements, a short tail dropped if asked
        keep = len(items) - len(items) % n if step[2] else len(items)
        return ds.batch(n, drop_remainder=step[2]).unbatch(), items[:keep]
    # zip with a shifted copy of itself, keep the sum: lengths are the shorter one's
    shifted = items[n:]
    pairs = D.zip((ds, ds.skip(n)))
    return pairs.map(lambda a, b: a + b), [a + b for a, b in zip(items, shifted)]


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(0, 20),
    chunk=st.integers(1, 5),
    steps=st.lists(STEPS, max_size=5),
)
def test_random_pipelines_match_python_lists(size, chunk, steps):
    old = sources.CHUNK
    sources.CHUNK = chunk  # small chunks: every step meets chunk boundaries
    try:
        with tf.Graph().as_default():
            ds, items = D.range(size), list(range(size))
            for step in steps:
                ds, items = _apply(ds, items, step)
            assert [int(v) for v in read_all(ds)] == items
    finally:
        sources.CHUNK = old


def test_a_dataset_feeds_a_model_placed_on_a_gpu():
    from flowbook.runtime.gpu_sim import simulate_gpu

    xs = np.arange(12, dtype=np.float32).reshape(6, 2)
    with simulate_gpu() as gpu, tf.Session() as s:
        x = D.from_tensor_slices(xs).map(lambda r: r * 2.0).batch(3).make_one_shot_iterator()
        y = tf.reduce_sum(tf.matmul(x.get_next(), tf.ones([2, 1])))  # on the GPU
        assert [float(s.run(y)) for _ in range(2)] == [2 * xs[:3].sum(), 2 * xs[3:].sum()]
        assert gpu.uploads >= 2  # the host's batches were copied to the device


def test_fetching_get_nexts_tuple_gives_a_tuple_as_any_fetch_does():
    x, y = D.from_tensor_slices(([1, 2], [3.0, 4.0])).make_one_shot_iterator().get_next()
    with tf.Session() as s:
        first = s.run((x, y))  # the session's flat-tuple path
        again = s.run((x, x, "IteratorGetNext:1"))  # repeats and names: the general path
    assert type(first) is tuple and [v.tolist() for v in first] == [1, 3.0]
    assert type(again) is tuple and [v.tolist() for v in again] == [2, 2, 4.0]


def test_fixed_length_records_and_list_files(tmp_path):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 12)
    for k in range(2):  # CIFAR style: a header, then a label byte and the pixels per record
        (tmp_path / f"part{k}.bin").write_bytes(b"HDR" + bytes([k]) + images[k].tobytes())
    names = D.list_files(str(tmp_path / "part*.bin"), shuffle=False)
    assert read_all(names) == [str(tmp_path / f"part{k}.bin").encode() for k in range(2)]
    records = tf.data.FixedLengthRecordDataset(read_all(names), 13, header_bytes=3)
    pixels = records.map(lambda r: tf.decode_raw(r, tf.uint8))
    got = read_all(pixels)
    assert [g.tolist() for g in got] == [[k, *images[k]] for k in range(2)]
    shuffled = sorted(read_all(D.list_files(str(tmp_path / "*.bin"), seed=1)))
    assert shuffled == read_all(names)
    with pytest.raises(tf.errors.InvalidArgumentError, match="match at least one file"):
        D.list_files(str(tmp_path / "none*"))
    bad = tf.data.FixedLengthRecordDataset(str(tmp_path / "part0.bin"), 5)
    with pytest.raises(DataLossError, match="not a whole number of 5-byte records"):
        read_all(bad)


def test_parallel_map_keeps_order_and_overlaps_elements():
    import time

    active, peak = [0], [0]
    lock = threading.Lock()

    def slow(v):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.01)  # releases the GIL, as file reads and big kernels do
        with lock:
            active[0] -= 1
        return v * 2

    def f(x):
        return tf.reshape(tf.py_func(slow, [x], tf.int64), [])

    ds = D.range(12).map(f, num_parallel_calls=4)
    assert [int(v) for v in read_all(ds)] == [2 * i for i in range(12)]
    assert peak[0] > 1
    failing = D.range(5).map(lambda x: tf.py_func(lambda v: 1 // (int(v) - 3), [x], tf.int64), 2)
    with pytest.raises(tf.errors.InvalidArgumentError, match="ZeroDivisionError"):
        read_all(failing)


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "flowbook-prefetch"]


def _wait_for_no_prefetch_threads():
    import gc
    import time

    for _ in range(100):
        gc.collect()
        if not _prefetch_threads():
            return True
        time.sleep(0.02)
    return False


def test_prefetch_computes_ahead_and_its_thread_ends_with_the_iterator():
    import time

    made = []
    ds = D.range(20).map(lambda x: tf.py_func(lambda v: made.append(int(v)) or v, [x], tf.int64))
    it = ds.prefetch(3).make_initializable_iterator()
    x = it.get_next()
    with tf.Session() as s:
        s.run(it.initializer)
        assert s.run(x) == 0
        for _ in range(100):  # the producer runs ahead of the reads, up to its buffer
            if len(made) >= 4:
                break
            time.sleep(0.01)
        assert 4 <= len(made) <= 6
        assert len(_prefetch_threads()) == 1
        s.run(it.initializer)  # the old pass is dropped: its producer stops
        assert [int(s.run(x)) for _ in range(20)] == list(range(20))
        with pytest.raises(OutOfRangeError):
            s.run(x)
    assert _wait_for_no_prefetch_threads()


def test_prefetch_hands_on_errors_in_order_and_stops():
    bad = D.from_tensor_slices([1.0, 2.0, 0.0, 4.0]).map(
        lambda v: tf.py_func(lambda a: 1 / float(a), [v], tf.float64)
    )
    x = bad.prefetch(2).make_one_shot_iterator().get_next()
    with tf.Session() as s:
        assert [s.run(x), s.run(x)] == [1.0, 0.5]
        with pytest.raises(tf.errors.InvalidArgumentError, match="ZeroDivisionError"):
            s.run(x)
    assert _wait_for_no_prefetch_threads()

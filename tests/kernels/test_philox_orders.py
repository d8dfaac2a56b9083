"""Seeded shuffles give TensorFlow's orders (``flowbook.kernels.philox``).

Every expected sequence here was observed with TensorFlow 2.21.0 (CPU),
``tensorflow.compat.v1`` in graph mode, running the same program; the
kernels behind these ops (Philox4x32-10, ``RandomShuffle``,
``RandomShuffleQueue``, ``ShuffleDataset``) are those of TF 1.x.  The graph-
level-seed-only case is left out: TF 2.x numbers those ops 0, 1, 2...,
TF 1.15 by the graph's op count, which flowbook follows.

The property tests check that shuffles stay permutations whatever the size,
buffer and seed, that the chunked ``Dataset.shuffle`` equals a plain
element-by-element reading of TF's buffer algorithm, and that unseeded
shuffles stay random.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbook as tf
from flowbook.kernels.philox import Philox, Words, fisher_yates, philox_rounds

R = tf.data.Dataset.range


def _drain(sess: tf.Session, t: tf.Tensor) -> list:
    out = []
    try:
        while True:
            out.append(sess.run(t).tolist())
    except tf.errors.OutOfRangeError:
        return out


# ------------------------------------------------------------------ Philox
def test_philox_known_answer() -> None:
    """Salmon et al.'s known answers for Philox4x32-10 (zero and all-ones inputs)."""
    zero = [np.zeros(1, np.uint32)] * 4
    assert [int(w[0]) for w in philox_rounds(zero, (0, 0))] == [
        0x6627E8D5,
        0xE169C58D,
        0xBC57AC4C,
        0x9B00DBD8,
    ]
    ones = [np.full(1, 0xFFFFFFFF, np.uint32)] * 4
    assert [int(w[0]) for w in philox_rounds(ones, (0xFFFFFFFF, 0xFFFFFFFF))] == [
        0x408F276D,
        0x41C83B0E,
        0xA20BC7C6,
        0x6D5451FD,
    ]


def test_philox_counter_carries_and_reserves() -> None:
    g = Philox(3, (1 << 64) - 1)  # seed2 fills the counter's upper half
    g.counter = (1 << 128) - 2  # two blocks from wrapping
    blocks = g.blocks(4)
    assert g.counter == 2
    again = Philox(3, 0)
    again.counter = (1 << 128) - 2
    assert np.array_equal(again.blocks(2), blocks[:2])
    assert np.array_equal(again.blocks(2), blocks[2:])  # wrapped to 0, 1
    h = Philox(1, 2)
    first = h.reserve(5)
    assert h.counter - first.counter == 5
    words = Words(Philox(1, 2))
    assert [words() for _ in range(6)] == Philox(1, 2).blocks(2).ravel()[:6].tolist()


# ---------------------------------------------------------- tf.random_shuffle
SHUFFLES = [  # (seed, n, the first two runs' orders) observed with TensorFlow 2.21.0
    (1, 10, [[7, 9, 3, 6, 5, 1, 8, 4, 0, 2], [5, 1, 8, 3, 0, 9, 4, 7, 2, 6]]),
    (7, 10, [[7, 2, 0, 9, 8, 4, 5, 1, 6, 3], [3, 7, 9, 5, 8, 4, 2, 0, 6, 1]]),
    (42, 10, [[2, 0, 7, 8, 9, 3, 6, 4, 1, 5], [9, 6, 7, 5, 3, 2, 1, 8, 4, 0]]),
]


@pytest.mark.parametrize(("seed", "n", "runs"), SHUFFLES)
def test_random_shuffle_is_tfs(seed: int, n: int, runs: list) -> None:
    with tf.Graph().as_default():
        t = tf.random_shuffle(tf.range(n), seed=seed)
        with tf.Session() as s:
            assert [s.run(t).tolist() for _ in runs] == runs


def test_random_shuffle_rows_and_long_inputs() -> None:
    with tf.Graph().as_default():
        rows = tf.random_shuffle(tf.reshape(tf.range(12), [6, 2]), seed=5)
        long = tf.random_shuffle(tf.range(1000), seed=5)
        with tf.Session() as s:
            r, g = s.run([rows, long])
    assert r[:, 0].tolist() == [2, 10, 4, 0, 8, 6]  # TF 2.21.0
    assert (r[:, 1] - r[:, 0]).tolist() == [1] * 6  # rows move whole
    assert g[:20].tolist() == [
        791,
        615,
        648,
        222,
        780,
        444,
        735,
        357,
        904,
        22,
        849,
        284,
        776,
        985,
        299,
        327,
        885,
        293,
        794,
        803,
    ]


# ------------------------------------------------------- RandomShuffleQueue
def test_random_shuffle_queue_is_tfs() -> None:
    with tf.Graph().as_default():
        q = tf.RandomShuffleQueue(20, 0, [tf.int32], shapes=[[]], seed=1)
        enq = q.enqueue_many([tf.range(10)])
        deq = q.dequeue()
        with tf.Session() as s:
            s.run(enq)
            assert [int(s.run(deq)) for _ in range(10)] == [7, 8, 1, 3, 9, 4, 2, 6, 5, 0]


def test_random_shuffle_queue_min_after_dequeue_and_close() -> None:
    with tf.Graph().as_default():
        q = tf.RandomShuffleQueue(20, 3, [tf.int32], shapes=[[]], seed=1)
        enq, deq, many = q.enqueue_many([tf.range(10)]), q.dequeue(), q.dequeue_many(3)
        up_to = q.dequeue_up_to(5)
        with tf.Session() as s:
            s.run(enq)
            got = [int(s.run(deq)) for _ in range(4)] + [s.run(many).tolist()]
            s.run(q.close())
            got.append(s.run(up_to).tolist())
    assert got == [7, 8, 1, 3, [9, 4, 2], [6, 5, 0]]  # TF 2.21.0


def test_closed_queue_short_of_elements_draws_nothing() -> None:
    """TF fails the too-large dequeue before drawing, so later picks are unchanged."""
    with tf.Graph().as_default():
        q = tf.RandomShuffleQueue(20, 2, [tf.int32], shapes=[[]], seed=4)
        enq, d7, d2 = q.enqueue_many([tf.range(6)]), q.dequeue_many(7), q.dequeue_many(2)
        d3 = q.dequeue_up_to(3)
        with tf.Session() as s:
            s.run(enq)
            got = [s.run(d2).tolist()]
            s.run(q.close())
            with pytest.raises(tf.errors.OutOfRangeError):
                s.run(d7)
            got += [s.run(d3).tolist(), s.run(d3).tolist()]
    assert got == [[1, 4], [2, 0, 5], [3]]  # TF 2.21.0


def test_queue_seed2_from_shared_name() -> None:
    """Graph seed, no op seed, a shared_name: seed2 is md5(seed + name), as in TF."""
    with tf.Graph().as_default():
        tf.set_random_seed(9)
        q = tf.RandomShuffleQueue(20, 0, [tf.int32], shapes=[[]], shared_name="abc")
        op = q.queue_ref.op
        assert (op.get_attr("seed"), op.get_attr("seed2")) == (9, 1886529937)  # TF 2.21.0
    assert int(hashlib.md5(b"9abc").hexdigest()[:8], 16) & 0x7FFFFFFF == 1886529937


# ----------------------------------------------- tf.train producers, batches
def test_shuffle_batch_is_tfs() -> None:
    """The runner's enqueue run by hand, so the interleaving is defined."""
    with tf.Graph().as_default():
        b = tf.train.shuffle_batch(
            [tf.range(20)], 4, capacity=30, min_after_dequeue=5, seed=7, enqueue_many=True
        )
        qr = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[0]
        with tf.Session() as s:
            s.run(qr.enqueue_ops[0])
            got = [s.run(b).tolist() for _ in range(3)]
            s.run(qr.queue.close())
            got += [s.run(b).tolist() for _ in range(2)]
    assert got == [  # TF 2.21.0
        [7, 4, 19, 15],
        [0, 8, 10, 11],
        [14, 6, 16, 1],
        [12, 3, 17, 5],
        [2, 18, 13, 9],
    ]


def test_input_producers_are_tfs() -> None:
    with tf.Graph().as_default():
        q = tf.train.string_input_producer([b"a", b"b", b"c", b"d", b"e"], shuffle=True, seed=11)
        qr = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[0]
        deq = q.dequeue_many(5)
        with tf.Session() as s:
            epochs = []
            for _ in range(3):
                s.run(qr.enqueue_ops[0])
                epochs.append(b"".join(s.run(deq)).decode())
    assert epochs == ["badec", "beacd", "adecb"]  # TF 2.21.0
    with tf.Graph().as_default():
        a, b = tf.train.slice_input_producer([tf.range(6), tf.range(6) * 10], shuffle=True, seed=3)
        qr = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[0]
        with tf.Session() as s:
            s.run(qr.enqueue_ops[0])
            pairs = [tuple(int(v) for v in s.run([a, b])) for _ in range(6)]
    assert pairs == [(5, 50), (4, 40), (2, 20), (0, 0), (3, 30), (1, 10)]  # TF 2.21.0


# ------------------------------------------------------------ Dataset.shuffle
DATASETS = [  # (what, dataset maker, order) observed with TensorFlow 2.21.0
    ("buffer 3", lambda: R(10).shuffle(3, seed=1), [1, 3, 0, 5, 2, 6, 7, 8, 9, 4]),
    ("whole input", lambda: R(10).shuffle(100, seed=1), [0, 9, 5, 1, 2, 7, 3, 8, 6, 4]),
    ("buffer == input", lambda: R(10).shuffle(10, seed=1), [0, 9, 5, 1, 2, 7, 3, 8, 6, 4]),
    (
        "buffer 3, 3 epochs",
        lambda: R(10).shuffle(3, seed=1).repeat(3),
        [1, 3, 0, 5, 2, 6, 7, 8, 9, 4, 1, 3, 0, 5, 4, 6, 8, 9, 2, 7,
         0, 3, 1, 5, 6, 7, 8, 4, 9, 2],
    ),
    (
        "whole input, 3 epochs",
        lambda: R(10).shuffle(100, seed=1).repeat(3),
        [0, 9, 5, 1, 2, 7, 3, 8, 6, 4, 8, 9, 7, 5, 4, 6, 2, 1, 0, 3,
         5, 6, 7, 1, 3, 0, 9, 8, 4, 2],
    ),
    (
        "no reshuffle",
        lambda: R(5).shuffle(5, seed=1, reshuffle_each_iteration=False).repeat(3),
        [2, 4, 0, 3, 1] * 3,
    ),
    ("repeat, then shuffle", lambda: R(6).repeat(2).shuffle(4, seed=3), [0, 3, 2, 1, 4, 1, 0, 3, 2, 5, 4, 5]),
    ("then batch", lambda: R(10).shuffle(4, seed=2).batch(3), [[0, 2, 4], [6, 3, 1], [7, 5, 9], [8]]),
    ("shuffle_and_repeat", lambda: R(10).apply(tf.data.experimental.shuffle_and_repeat(3, 3, 1)),
     [1, 3, 0, 5, 2, 6, 7, 8, 9, 4, 1, 3, 0, 5, 4, 6, 8, 9, 2, 7, 0, 3, 1, 5, 6, 7, 8, 4, 9, 2]),
    ("two shuffles", lambda: R(8).shuffle(8, seed=1).shuffle(3, seed=2), [3, 6, 5, 2, 7, 0, 4, 1]),
    ("a new inner dataset each time",  # flat_map's datasets start their seeds afresh
     lambda: R(3).flat_map(lambda x: R(4).shuffle(4, seed=5)), [1, 3, 0, 2] * 3),
]  # fmt: skip


@pytest.mark.parametrize(("what", "make", "order"), DATASETS, ids=[d[0] for d in DATASETS])
def test_dataset_shuffle_is_tfs(what: str, make: object, order: list) -> None:
    with tf.Graph().as_default():
        nxt = tf.data.make_one_shot_iterator(make()).get_next()  # type: ignore[operator]
        with tf.Session() as s:
            assert _drain(s, nxt) == order


def test_reinitialised_iterator_starts_the_seeds_again() -> None:
    with tf.Graph().as_default():
        it = tf.data.make_initializable_iterator(R(10).shuffle(4, seed=2).repeat(2))
        nxt = it.get_next()
        with tf.Session() as s:
            passes = []
            for _ in range(2):
                s.run(it.initializer)
                passes.append(_drain(s, nxt))
    first = [0, 2, 4, 6, 3, 1, 7, 5, 9, 8, 1, 4, 3, 0, 5, 2, 9, 7, 8, 6]  # TF 2.21.0
    assert passes == [first, first]


# ----------------------------------------------------- seeded random values
VALUES = [  # (what, builder, first run, second run's first 3) observed with TensorFlow 2.21.0
    ("uniform f32", lambda: tf.random_uniform([9], seed=3),
     [0.38692939281463623, 0.3600262403488159, 0.9768795967102051, 0.0865163803100586,
      0.5038012266159058, 0.3585019111633301, 0.20932388305664062, 0.02714252471923828,
      0.4244014024734497], [0.02821803092956543, 0.5302705764770508, 0.411094069480896]),
    ("uniform f64", lambda: tf.random_uniform([5], dtype=tf.float64, seed=3),
     [0.0954352046549809, 0.8150370178493045, 0.030410284844230695, 0.6745911073445203,
      0.3952113641569046], [0.83714741522953, 0.6403576940476279, 0.0011796403038544234]),
    ("uniform f16", lambda: tf.random_uniform([5], dtype=tf.float16, seed=3),
     [0.7255859375, 0.3349609375, 0.59765625, 0.7421875, 0.1396484375],
     [0.23828125, 0.9658203125, 0.7255859375]),
    ("uniform [2, 4)", lambda: tf.random_uniform([2, 3], 2.0, 4.0, seed=4),
     [3.913163423538208, 2.5336215496063232, 3.9955954551696777, 3.691786050796509,
      2.0603673458099365, 2.5789377689361572],
     [3.4993464946746826, 3.6392641067504883, 2.5708441734313965]),
    ("normal f32", lambda: tf.random_normal([9], seed=3),
     [1.0616620779037476, -0.8785783052444458, 0.11187215894460678, 0.18511717021465302,
      0.9092256426811218, -0.7378723621368408, 0.3001501262187958, 1.742887020111084,
      -0.06316554546356201], [-0.5050029754638672, -2.623082399368286, 1.3330936431884766]),
    ("normal f64", lambda: tf.random_normal([5], dtype=tf.float64, seed=3),
     [-1.9891512607565875, 0.8613319661711827, -2.3519238994697904, -1.2059862321712569,
      -1.36111682121295], [-0.4602690385384508, -0.3790285127776757, -0.34308954600495767]),
    ("normal f16", lambda: tf.random_normal([5], dtype=tf.float16, seed=3),
     [1.0615234375, -0.87841796875, 0.11187744140625, 0.18505859375, 0.9091796875],
     [1.1689453125, -0.321533203125, 0.29345703125]),
    ("truncated f32", lambda: tf.truncated_normal([9], seed=3),
     [1.0616620779037476, -0.8785783052444458, 0.11187215894460678, 0.18511717021465302,
      -0.16233478486537933, -0.8913859724998474, -0.8166395425796509, 0.6149268746376038,
      0.8271171450614929], [-0.5050029754638672, 1.3330936431884766, 0.026977263391017914]),
    ("truncated f64", lambda: tf.truncated_normal([5], dtype=tf.float64, seed=3),
     [-1.9891512607565875, 0.8613319661711827, 0.5001542461196736, 0.22716356511291347,
      -1.5363172811301835], [-0.4602690385384508, -0.3790285127776757, -1.6941140643363706]),
    ("int32", lambda: tf.random_uniform([7], -5, 1000, dtype=tf.int32, seed=3),
     [447, 923, 620, 585, 582, 396, 651], [502, 475, 1]),
    ("int64", lambda: tf.random_uniform([5], -5, 10**12, dtype=tf.int64, seed=3),
     [617489679325, 491454670450, 40374726488, 247302913843, 527466333592],
     [918124127485, 763990486243, 898679774556]),
]  # fmt: skip


@pytest.mark.parametrize(("what", "make", "first", "second"), VALUES, ids=[v[0] for v in VALUES])
def test_seeded_random_values_are_tfs(what: str, make: object, first: list, second: list) -> None:
    """Bit for bit, but for float32 normals: TF's glibc sinf/logf can be one ulp off."""
    with tf.Graph().as_default():
        t = make()  # type: ignore[operator]
        with tf.Session() as s:
            a, b = s.run(t).ravel(), s.run(t).ravel()[:3]
    if what in ("normal f32", "truncated f32"):
        np.testing.assert_allclose(a, first, rtol=0, atol=2.5e-7)
        np.testing.assert_allclose(b, second, rtol=0, atol=2.5e-7)
    else:
        assert a.tolist() == first
        assert b.tolist() == second


# ------------------------------------------------------------- properties
def _tf_buffer_shuffle(n: int, size: int, words: Words) -> list[int]:
    """TF's ShuffleDataset for one pass over range(n), element by element."""
    ring: list[int] = [0] * size
    start = end = 0
    out = []
    while True:
        while end < n and end - start < size:
            ring[end % size] = end
            end += 1
        if start == end:
            return out
        k = (start + words() % (end - start)) % size
        out.append(ring[k])
        ring[k] = ring[start % size]
        start += 1


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(0, 60),
    size=st.integers(1, 70),
    seed=st.integers(0, 2**31 - 1),
    chunked=st.booleans(),
)
def test_dataset_shuffle_is_tfs_algorithm(n: int, size: int, seed: int, chunked: bool) -> None:
    """One pass is a permutation, equal to the plain algorithm, whatever the chunking."""
    data = R(n) if chunked else tf.data.Dataset.from_generator(lambda: iter(range(n)), tf.int64)
    with tf.Graph().as_default():
        nxt = tf.data.make_one_shot_iterator(data.shuffle(size, seed=seed)).get_next()
        with tf.Session() as s:
            got = _drain(s, nxt)
    seeds = Words(Philox(87654321, seed % (2**31 - 1)))
    assert got == _tf_buffer_shuffle(n, size, Words(Philox(seeds(), seeds())))
    assert sorted(got) == list(range(n))


@settings(max_examples=50, deadline=None)
@given(n=st.integers(0, 400), seed=st.integers(0, 2**63 - 1))
def test_fisher_yates_is_the_swap_loop(n: int, seed: int) -> None:
    """The vectorised order equals TF's loop of swaps, read literally."""
    words = Words(Philox(seed, seed // 3)).take(max(n - 1, 0)).tolist()
    order = list(range(n))
    for i in range(n - 1):
        j = i + words[i] % (n - i)
        order[i], order[j] = order[j], order[i]
    assert fisher_yates(n, Words(Philox(seed, seed // 3))).tolist() == order


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 300), seed=st.integers(1, 2**31 - 1), cols=st.integers(0, 2))
def test_random_shuffle_stays_a_permutation(n: int, seed: int, cols: int) -> None:
    width = max(cols, 1)
    value = np.arange(n * width).reshape((n, cols) if cols else (n,))
    with tf.Graph().as_default():
        t = tf.random_shuffle(value, seed=seed)
        with tf.Session() as s:
            a, b = s.run(t), s.run(t)
    for out in (a, b):
        assert np.array_equal(np.sort(out, axis=0), value)
        assert np.array_equal(out.reshape(n, width) % width, value.reshape(n, width) % width)
    rows = a.reshape(n, width)[:, 0] // width  # which row went where
    assert rows.tolist() == fisher_yates(n, Words(Philox(87654321, seed % (2**31 - 1)))).tolist()


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 40), keep=st.integers(0, 10), seed=st.integers(1, 2**31 - 1))
def test_shuffle_queue_stays_a_permutation(n: int, keep: int, seed: int) -> None:
    with tf.Graph().as_default():
        q = tf.RandomShuffleQueue(64, keep, [tf.int32], shapes=[[]], seed=seed)
        enq, deq = q.enqueue_many([tf.range(n)]), q.dequeue_up_to(64)
        with tf.Session() as s:
            s.run(enq)
            s.run(q.close())
            got = s.run(deq).tolist()
    items, words, want = list(range(n)), Words(Philox(87654321, seed % (2**31 - 1))), []
    while items:
        k = words() % len(items)
        items[k], items[-1] = items[-1], items[k]
        want.append(items.pop())
    assert got == want
    assert sorted(got) == list(range(n))


def test_unseeded_shuffles_stay_random() -> None:
    orders = []
    for _ in range(2):
        with tf.Graph().as_default():
            t = tf.random_shuffle(tf.range(30))
            nxt = tf.data.make_one_shot_iterator(R(30).shuffle(30)).get_next()
            q = tf.RandomShuffleQueue(40, 0, [tf.int32], shapes=[[]])
            enq, deq = q.enqueue_many([tf.range(30)]), q.dequeue_many(30)
            with tf.Session() as s:
                s.run(enq)
                orders.append((s.run(t).tolist(), _drain(s, nxt), s.run(deq).tolist()))
    for first, second in zip(*orders):
        assert sorted(first) == sorted(second) == list(range(30))
        assert first != second  # equal with chance 1/30!


@pytest.mark.parametrize("buffer", [10, 100])  # the ring, and the whole input at once
def test_unseeded_dataset_shuffle_keeps_tf_rules_per_pass(buffer):
    """Unseeded: numpy's generator (TF's order is fresh from the OS), TF's per-pass rules."""
    with tf.Graph().as_default(), tf.Session() as s:
        fixed = tf.data.Dataset.range(50).shuffle(buffer, reshuffle_each_iteration=False)
        fresh = tf.data.Dataset.range(50).shuffle(buffer)
        a = fixed.batch(50).repeat(2).make_one_shot_iterator().get_next()
        b = fresh.batch(50).repeat(2).make_one_shot_iterator().get_next()
        a1, a2, b1, b2 = s.run(a), s.run(a), s.run(b), s.run(b)
    for order in (a1, a2, b1, b2):
        assert sorted(order.tolist()) == list(range(50))
    assert a1.tolist() == a2.tolist()  # one iterator, no reshuffling: the same order each pass
    assert b1.tolist() != b2.tolist()  # reshuffled (equal with probability ~1/50!)
    assert a1.tolist() != list(range(50))

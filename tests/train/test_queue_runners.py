"""Queue runners, the Coordinator and the tf.train input pipeline."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowbook as tf


def _run_all(s, fetch):
    """Fetch ``fetch`` until the input ends; the list of results."""
    out = []
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(s, coord)
    try:
        while not coord.should_stop():
            out.append(s.run(fetch))
    except tf.errors.OutOfRangeError:
        pass
    finally:
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=2)
    return out


def test_coordinator_reraises_and_treats_out_of_range_as_a_clean_stop():
    coord = tf.train.Coordinator()
    coord.request_stop(tf.errors.OutOfRangeError(None, None, "done"))
    coord.join()
    coord = tf.train.Coordinator()

    def work():
        with coord.stop_on_exception():
            raise RuntimeError("boom")

    t = threading.Thread(target=work)
    t.start()
    with pytest.raises(RuntimeError, match="boom"):
        coord.join([t])


def test_coordinator_join_names_threads_past_the_grace_period():
    coord = tf.train.Coordinator()
    hold = threading.Event()
    t = threading.Thread(target=hold.wait, name="stuck")
    t.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="stuck"):
        coord.join([t], stop_grace_period_secs=0.05)
    hold.set()
    t.join()


def test_slice_input_producer_and_batch_give_every_row_once_per_epoch():
    images = np.arange(20, dtype=np.float32).reshape(10, 2)
    labels = np.arange(10, dtype=np.int32)
    image, label = tf.train.slice_input_producer([images, labels], num_epochs=2, shuffle=False)
    xb, yb = tf.train.batch([image, label], batch_size=4, allow_smaller_final_batch=True)
    assert xb.shape.as_list() == [None, 2]
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        got = _run_all(s, [xb, yb])
    ys = np.concatenate([y for _, y in got])
    xs = np.concatenate([x for x, _ in got])
    assert list(ys) == list(range(10)) * 2  # FIFO, unshuffled: in order
    np.testing.assert_array_equal(xs, images[ys])


def test_shuffle_batch_of_a_string_producer_loses_and_repeats_nothing():
    def run_once():
        with tf.Graph().as_default():
            tf.set_random_seed(3)
            names = tf.train.string_input_producer([f"f{i}" for i in range(8)], num_epochs=1)
            b = tf.train.shuffle_batch(
                [names.dequeue()],
                4,
                capacity=8,
                min_after_dequeue=2,
                allow_smaller_final_batch=True,
                seed=5,
            )
            assert isinstance(b, tf.Tensor)  # one tensor in a list comes back bare, as in TF
            with tf.Session() as s:
                s.run(tf.local_variables_initializer())
                return [v for batch in _run_all(s, b) for v in batch]

    # With runner threads, how full the queue is when a dequeue_many takes its
    # elements depends on the threads' timing, in TensorFlow too, so two runs
    # may differ; the seeded order under a fixed schedule is TF's
    # (tests/kernels/test_philox_orders.py).  What must hold: every name once, none lost.
    for _ in range(2):
        assert sorted(run_once()) == sorted(f"f{i}".encode() for i in range(8))


def test_batch_join_dict_and_dynamic_pad():
    x = tf.train.limit_epochs(tf.constant([[1, 2]]), 1)
    out = tf.train.batch({"a": tf.reshape(x, [-1])}, 2, dynamic_pad=True, enqueue_many=False)
    assert set(out) == {"a"}
    y = tf.train.batch_join([[tf.constant(1)], [tf.constant(2)]], 4)
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord)
        assert set(s.run(y)) <= {1, 2}
        coord.request_stop()
        coord.join(threads)


def test_a_runner_error_reaches_join():
    q = tf.FIFOQueue(5, tf.float32, shapes=[[2]])
    enq = q.enqueue(tf.placeholder_with_default([1.0, 2.0, 3.0], [None]))  # the wrong length
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [enq]))
    with tf.Session() as s:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(s, coord)
        with pytest.raises(tf.errors.InvalidArgumentError):
            coord.join(threads, stop_grace_period_secs=2)


def test_no_thread_survives_join_and_close():
    before = set(threading.enumerate())
    q = tf.FIFOQueue(2, tf.int32)  # small: the runners block on a full queue
    qr = tf.train.QueueRunner(q, [q.enqueue(1)] * 3)
    tf.train.add_queue_runner(qr)
    s = tf.Session()
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(s, coord)
    assert s.run(q.dequeue()) == 1
    coord.request_stop()
    coord.join(threads, stop_grace_period_secs=1)
    s.close()
    left = [t for t in set(threading.enumerate()) - before if t.is_alive()]
    assert not [t for t in left if t.name.startswith("QueueRunner")]


def test_match_filenames_once(tmp_path):
    for n in ("b.txt", "a.txt", "c.csv"):
        (tmp_path / n).write_text("x")
    files = tf.train.match_filenames_once(str(tmp_path / "*.txt"))
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        got = s.run(files)
    assert [f.decode().rsplit("/", 1)[1] for f in got] == ["a.txt", "b.txt"]


def test_range_input_producer_epochs():
    q = tf.train.range_input_producer(3, num_epochs=2, shuffle=False)
    d = q.dequeue()
    with tf.Session() as s:
        s.run(tf.local_variables_initializer())
        assert _run_all(s, d) == [0, 1, 2, 0, 1, 2]

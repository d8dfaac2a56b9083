"""A model trained from an input pipeline reaches the feed_dict version's test accuracy.

The softmax regression of tutorial 3 on the digits, trained for the same
number of batches of 100 three ways: ``feed_dict``, TFRecord files read by a
``TFRecordReader`` into ``shuffle_batch`` (QueueRunners and a Coordinator),
and ``tf.data`` (``TFRecordDataset`` -> parse -> shuffle -> batch).  Each
shuffles differently, so the accuracies agree within a small tolerance.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import flowbook as tf
from flowbook.data.datasets import load_digits

STEPS = 200  # batches of 100: about 15 epochs of the 1,347 training digits
TOLERANCE = 0.02  # test accuracy, of 450 test digits (9 of them)
FEATURES = {"image": ([64], "float32"), "label": ([], "int64")}


@pytest.fixture(scope="module")
def digits():
    return load_digits()


@pytest.fixture(scope="module")
def files(digits, tmp_path_factory):
    """The training digits in two TFRecord files of tf.train.Examples."""
    folder = tmp_path_factory.mktemp("tfrecords")
    paths = [str(folder / f"train-{k}.tfrecord") for k in range(2)]
    for k, path in enumerate(paths):
        with tf.python_io.TFRecordWriter(path) as writer:
            for image, label in zip(digits.train.images[k::2], digits.train.labels[k::2]):
                feature = {
                    "image": tf.train.Feature(float_list=tf.train.FloatList(value=image)),
                    "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
    return paths


def _features() -> dict:
    return {k: tf.FixedLenFeature(shape, getattr(tf, dt)) for k, (shape, dt) in FEATURES.items()}


def _train(digits, inputs, feed=None) -> float:
    """Train the softmax model on the batches ``inputs()`` builds; its test accuracy."""
    with tf.Graph().as_default(), tf.Session() as sess:
        images, labels = inputs()
        W = tf.Variable(tf.zeros([64, 10]))
        b = tf.Variable(tf.zeros([10]))
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=tf.matmul(images, W) + b
            )
        )
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        test = tf.matmul(tf.constant(digits.test.images), W) + b
        accuracy = tf.reduce_mean(
            tf.cast(tf.equal(tf.argmax(test, 1), digits.test.labels), tf.float32)
        )
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            for _ in range(STEPS):
                sess.run(step, feed(images, labels) if feed else None)
        finally:
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
        return float(sess.run(accuracy))


@pytest.fixture(scope="module")
def fed_accuracy(digits):
    batches = load_digits().train  # its own shuffling, as tutorial 3 uses it

    def placeholders():
        return tf.placeholder(tf.float32, [None, 64]), tf.placeholder(tf.int64, [None])

    def feed(x, y):
        bx, by = batches.next_batch(100)
        return {x: bx, y: by}

    return _train(digits, placeholders, feed)


def test_the_feed_dict_model_learns(fed_accuracy):
    assert fed_accuracy >= 0.93


def test_a_model_trained_from_queues_matches_feed_dict(digits, files, fed_accuracy):
    def queues():
        filename_queue = tf.train.string_input_producer(files, seed=1)
        _, serialized = tf.TFRecordReader().read(filename_queue)
        example = tf.parse_single_example(serialized, _features())
        return tf.train.shuffle_batch(
            [example["image"], example["label"]], 100, capacity=2000, min_after_dequeue=1000, seed=2
        )

    before = set(threading.enumerate())
    accuracy = _train(digits, queues)
    assert abs(accuracy - fed_accuracy) <= TOLERANCE, (accuracy, fed_accuracy)
    assert not [t for t in threading.enumerate() if t not in before and t.is_alive()]


def test_a_model_trained_from_tf_data_matches_feed_dict(digits, files, fed_accuracy):
    def dataset():
        ds = tf.data.TFRecordDataset(files).map(lambda r: tf.parse_single_example(r, _features()))
        batch = ds.shuffle(2000, seed=3).batch(100).repeat().make_one_shot_iterator().get_next()
        return batch["image"], batch["label"]

    accuracy = _train(digits, dataset)
    assert abs(accuracy - fed_accuracy) <= TOLERANCE, (accuracy, fed_accuracy)


def test_every_pipeline_sees_every_training_example(digits, files):
    """What the two pipelines read back is the training set, once per epoch."""
    with tf.Graph().as_default(), tf.Session() as sess:
        ds = tf.data.TFRecordDataset(files).map(lambda r: tf.parse_single_example(r, _features()))
        got = ds.batch(2000).make_one_shot_iterator().get_next()
        out = sess.run(got)
    order = np.lexsort(digits.train.images.T[::-1])
    back = np.lexsort(out["image"].T[::-1])
    np.testing.assert_array_equal(out["image"][back], digits.train.images[order])
    np.testing.assert_array_equal(out["label"][back], digits.train.labels[order])

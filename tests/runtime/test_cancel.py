"""Ending a run in flight: Session.close() from another thread, and an interrupt.

Both end the run within a second, naming the op it was in; the session stays
usable for nothing after close (a later run is refused), and a close that comes
as a run finishes never raises in code after it.
"""

from __future__ import annotations

import _thread
import signal
import threading
import time

import numpy as np
import pytest

import flowbook as tf

LONG_LOOP = 2**31 - 1  # iterations: hours, were it not ended
SAFETY = tf.RunOptions(timeout_in_ms=60_000)  # a broken cancel fails the test, never hangs it


def _long_loop():
    x = tf.placeholder(tf.float32, name="x")
    _, out = tf.while_loop(
        lambda i, v: i < LONG_LOOP, lambda i, v: (i + 1, v * 1.0000001), [tf.constant(0), x]
    )
    return x, out


def _close_later(sess, after_s: float) -> list[float]:
    closed_at: list[float] = []

    def close():
        closed_at.append(time.monotonic())
        sess.close()

    threading.Timer(after_s, close).start()
    return closed_at


@pytest.mark.parametrize("how", ["compiled loop", "watched loop"])
def test_close_from_another_thread_ends_a_loop_within_a_second(how):
    with tf.Graph().as_default():
        x, out = _long_loop()
        sess = tf.Session()
        watch = tf.observe(_EachOp()) if how == "watched loop" else _nothing()
        with watch:
            closed_at = _close_later(sess, 0.3)
            with pytest.raises(tf.errors.CancelledError) as info:
                sess.run(out, {x: np.float32(1.0)}, options=SAFETY)
        ended = time.monotonic() - closed_at[0]
    assert ended < 1.0, ended
    assert "Session.close() ended the run while" in str(info.value)
    assert info.value.op is not None and info.value.op.name.startswith("while/")
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(out, {x: np.float32(1.0)})


def test_close_ends_a_python_kernel_that_works_in_steps():
    def slow(a):
        for _ in range(300):  # 3 s in small steps
            time.sleep(0.01)
        return a

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, name="x")
        y = tf.py_func(slow, [x], tf.float32, name="slow")
        sess = tf.Session()
        closed_at = _close_later(sess, 0.3)
        with pytest.raises(tf.errors.CancelledError) as info:
            sess.run(y, {x: np.float32(1.0)})
        assert time.monotonic() - closed_at[0] < 1.0
        assert info.value.op is y.op


def test_a_close_as_runs_finish_never_raises_after_them():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, name="x")
        y = x * 2.0
        for delay in (0.0, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.01, 0.02):
            sess = tf.Session()
            outcome: list[BaseException | str] = []

            def work(sess=sess, outcome=outcome):
                try:
                    while True:
                        sess.run(y, {x: np.float32(1.0)})
                except (RuntimeError, tf.errors.CancelledError) as e:
                    outcome.append(e)
                try:  # plain Python after the runs: a withdrawn cancel never lands here
                    total = 0
                    for k in range(200_000):
                        total += k
                    outcome.append("clean")
                except BaseException as e:
                    outcome.append(e)

            t = threading.Thread(target=work)
            t.start()
            time.sleep(delay)
            sess.close()
            t.join(timeout=10)
            assert not t.is_alive()
            assert outcome[-1] == "clean", outcome


@pytest.fixture
def ctrl_c():
    """Python's own Ctrl-C handler, as a notebook kernel has it: a process started in the
    background (as CI may be) inherits SIGINT ignored, and then interrupt_main() does nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_an_interrupt_names_the_op_it_stopped_in(ctrl_c):
    with tf.Graph().as_default():
        x, out = _long_loop()
        with tf.Session() as sess:
            sent: list[float] = []

            def interrupt():
                sent.append(time.monotonic())
                _thread.interrupt_main()

            threading.Timer(0.3, interrupt).start()
            with pytest.raises(KeyboardInterrupt) as info:
                sess.run(out, {x: np.float32(1.0)}, options=SAFETY)
            assert time.monotonic() - sent[0] < 1.0
            notes = getattr(info.value, "__notes__", [])
            assert any("interrupted while" in n and "while/" in n for n in notes), notes
            assert float(sess.run(x, {x: np.float32(2.0)})) == 2.0  # the session goes on


class _EachOp(tf.Observer):
    """Watches every op: the loop runs on the scheduler, not compiled."""

    def before_op(self, op):
        pass


class _nothing:  # a do-nothing context, as observe() is one
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

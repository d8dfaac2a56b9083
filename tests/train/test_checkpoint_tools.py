"""load_checkpoint / NewCheckpointReader, checkpoint mtimes, removal and the iterator."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import flowbook as fb
from flowbook import train


def _save(d, steps):
    with fb.Graph().as_default():
        fb.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
        fb.Variable(3, name="n")
        saver = train.Saver(max_to_keep=10)
        with fb.Session() as s:
            s.run(fb.global_variables_initializer())
            return [saver.save(s, os.path.join(d, "m.ckpt"), global_step=k) for k in steps]


def test_reader_answers_from_the_checkpoint(tmp_path):
    (path,) = _save(str(tmp_path), [1])
    for r in (train.load_checkpoint(str(tmp_path)), train.NewCheckpointReader(path)):
        assert r.get_variable_to_shape_map() == {"n": [], "w": [2, 3]}
        assert r.get_variable_to_dtype_map() == {"n": np.int32, "w": np.float32}
        assert r.has_tensor("w") and not r.has_tensor("v")
        np.testing.assert_array_equal(r.get_tensor("w:0"), np.arange(6).reshape(2, 3))
        assert b"w (float32) [2, 3]" in r.debug_string()
        with pytest.raises(fb.errors.NotFoundError):
            r.get_tensor("v")
    with pytest.raises(fb.errors.NotFoundError):
        train.NewCheckpointReader(str(tmp_path / "nothing"))


def test_mtimes_and_remove(tmp_path):
    paths = _save(str(tmp_path), [1, 2])
    assert len(train.get_checkpoint_mtimes([*paths, str(tmp_path / "gone")])) == 2
    train.remove_checkpoint(paths[0])
    assert not train.checkpoint_exists(paths[0]) and train.checkpoint_exists(paths[1])
    assert len(train.get_checkpoint_mtimes(paths)) == 1


def test_checkpoints_iterator_yields_new_checkpoints_and_times_out(tmp_path):
    d = str(tmp_path)
    _save(d, [1])
    timeout, got, timeouts, saved = 0.2, [], [], [False]
    saver = threading.Thread(target=_save, args=(d, [2]))

    def timed_out():  # `timeout` seconds passed with no new checkpoint
        timeouts.append(len(got))
        if len(got) != 1 or saved[0]:
            return True  # after the second, stop; or a whole wait since it was saved: unseen
        saved[0] = not saver.is_alive()
        return False  # checkpoint 2 comes from a thread, as late as load makes it: wait on

    last = time.time()
    for path in train.checkpoints_iterator(d, timeout=timeout, timeout_fn=timed_out):
        got.append(os.path.basename(path))
        last = time.time()
        if len(got) == 1:  # the iterator waits for a new one from now on: save it meanwhile
            saver.start()
    if got:
        saver.join()
    assert got == ["m.ckpt-1", "m.ckpt-2"]
    assert timeouts[-1] == 2 and time.time() - last >= timeout  # it stopped on a timeout
    calls = []
    assert (
        list(
            train.checkpoints_iterator(
                str(tmp_path / "empty"),
                timeout=0.05,
                timeout_fn=lambda: calls.append(1) or len(calls) > 1,
            )
        )
        == []
    )
    assert len(calls) == 2  # timeout_fn False once: waited again

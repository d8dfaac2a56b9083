"""A save onto a full disk: ``ResourceExhaustedError`` naming the file, nothing lost.

``flowbook.platform.files.atomic_write`` turns ``ENOSPC`` (and ``EDQUOT``)
into TensorFlow's ``ResourceExhaustedError``, removes its temp file and
leaves the previous file as it was.  The disk fills two ways here: a write
that fails half-way (monkeypatched), and a real 64 KiB tmpfs (skipped
where this process may not mount one).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import flowbook as tf
from flowbook.framework import errors
from flowbook.platform import files


class _FillingFile:
    """A file whose writes fail with ``code`` once ``room`` bytes have been written."""

    def __init__(self, f, room: int, code: int) -> None:
        self._f, self._room, self._code = f, room, code

    def write(self, data) -> int:
        if len(data) > self._room:
            self._f.write(bytes(data)[: self._room])
            self._room = 0
            raise OSError(self._code, os.strerror(self._code))
        self._room -= len(data)
        return self._f.write(data)

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._f.close()


def _fill_after(monkeypatch, room: int, code: int = errno.ENOSPC) -> None:
    real = os.fdopen
    monkeypatch.setattr(
        os, "fdopen", lambda fd, *a, **k: _FillingFile(real(fd, *a, **k), room, code)
    )


def _temps(folder: Path) -> list[str]:
    return [n for n in os.listdir(folder) if files.is_temp_name(n)]


@pytest.mark.parametrize("code", [errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)])
def test_atomic_write_on_a_full_disk(tmp_path, monkeypatch, code):
    path = tmp_path / "notes.txt"
    files.atomic_write(path, b"old")
    _fill_after(monkeypatch, 3, code)
    with pytest.raises(errors.ResourceExhaustedError, match="no space left on device writing") as e:
        files.atomic_write(path, b"new content")
    assert str(path) in str(e.value) and isinstance(e.value.__cause__, OSError)
    assert path.read_bytes() == b"old" and _temps(tmp_path) == []


def test_other_os_errors_propagate_unchanged(tmp_path, monkeypatch):
    _fill_after(monkeypatch, 0, errno.EIO)
    with pytest.raises(OSError) as e:
        files.atomic_write(tmp_path / "x", b"data")
    assert e.value.errno == errno.EIO and not isinstance(e.value, errors.OpError)
    assert _temps(tmp_path) == []


def _model():
    v = tf.Variable(np.arange(1000, dtype=np.float32), name="v")
    return v, v.assign(v * 2), tf.train.Saver()


def test_saver_save_on_a_full_disk_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    prefix = str(tmp_path / "model.ckpt")
    with tf.Graph().as_default():
        v, double, saver = _model()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = saver.save(sess, prefix, global_step=1)
            sess.run(double)
            with monkeypatch.context() as m:
                _fill_after(m, 100)
                with pytest.raises(errors.ResourceExhaustedError, match="no space left on device"):
                    saver.save(sess, prefix, global_step=2)
            assert _temps(tmp_path) == []
            assert tf.train.latest_checkpoint(str(tmp_path)) == first
            saver.restore(sess, first)
            np.testing.assert_array_equal(sess.run(v), np.arange(1000, dtype=np.float32))


@contextlib.contextmanager
def _tiny_tmpfs(folder: Path, size: str):
    folder.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
            capture_output=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as e:
        pytest.skip(f"cannot mount a tmpfs here: {e}")
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True, timeout=20, check=False)


def test_saver_save_on_a_real_full_tmpfs(tmp_path):
    with _tiny_tmpfs(tmp_path / "tiny", "64k") as folder, tf.Graph().as_default():
        v = tf.Variable(np.ones(1000, dtype=np.float32), name="v")  # 4 KB: fits
        big = tf.Variable(np.zeros(1, dtype=np.float32), name="big", validate_shape=False)
        grow = tf.assign(big, tf.random_uniform([40000]), validate_shape=False)  # 160 KB: no room
        saver = tf.train.Saver([v, big])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = saver.save(sess, str(folder / "model.ckpt"), global_step=1)
            sess.run(grow)
            with pytest.raises(errors.ResourceExhaustedError, match=str(folder)):
                saver.save(sess, str(folder / "model.ckpt"), global_step=2)
            assert _temps(folder) == []
            assert tf.train.latest_checkpoint(str(folder)) == first
            saver.restore(sess, first)
            np.testing.assert_array_equal(sess.run(v), np.ones(1000, dtype=np.float32))

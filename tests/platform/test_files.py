"""flowbook.platform.files.atomic_write, and every file flowbook writes going through it.

The mode a file gets (the umask's, also on overwrite), temp files swept up
after a killed writer but never under a live one, nothing left behind by an
exception, and the callers: checkpoints, the ``checkpoint`` state file,
``write_graph`` and ``Profile.save_trace``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import flowbook as fb
from flowbook import train
from flowbook.graph_io.graph_def import write_graph
from flowbook.platform import files
from flowbook.train.checkpoint_utils import write_checkpoint

POSIX = os.name == "posix"


@pytest.fixture
def umask():
    """Set the process umask for one test (``umask(0o027)``); the old one comes back after."""
    old = os.umask(0o022)
    os.umask(old)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _temps(d) -> list[str]:
    return sorted(n for n in os.listdir(d) if files.is_temp_name(n))


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=60)
    return proc.pid


def _temp_of(d, target: str, pid: int, host: str = files._HOST, age_s: float = 0.0) -> str:
    """Plant a temp file as a writer ``pid`` on ``host`` would have left it."""
    path = os.path.join(d, f".{target}.{host}.{pid}.abc123{files.TEMP_SUFFIX}")
    with open(path, "wb") as f:
        f.write(b"x" * 1000)
    if age_s:
        then = time.time() - age_s
        os.utime(path, (then, then))
    return path


# ------------------------------------------------------------------ the mode
@pytest.mark.skipif(not POSIX, reason="file modes are POSIX")
@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_new_and_overwritten_files_get_the_umask_mode(tmp_path, umask, mask):
    umask(mask)
    path = tmp_path / "a.txt"
    files.atomic_write(path, "one")
    assert _mode(path) == 0o666 & ~mask
    os.chmod(path, 0o600)  # an overwrite does not keep the old mode either
    files.atomic_write(path, b"two")
    assert _mode(path) == 0o666 & ~mask
    assert path.read_text() == "two"
    assert _temps(tmp_path) == []


@pytest.mark.skipif(not POSIX, reason="file modes are POSIX")
def test_checkpoints_and_state_file_are_readable_by_the_group(tmp_path, umask):
    """Was 0600 whatever the umask (tempfile.mkstemp's mode): a class could not share them."""
    umask(0o022)
    fb.Variable(np.ones(3, np.float32), name="w")
    saver = train.Saver()
    with fb.Session() as sess:
        sess.run(fb.global_variables_initializer())
        prefix = saver.save(sess, str(tmp_path / "model.ckpt"))
        for f in (prefix + ".index", prefix + ".data-00000-of-00001", tmp_path / "checkpoint"):
            assert _mode(f) == 0o644, f
        umask(0o002)
        saver.save(sess, str(tmp_path / "model.ckpt"))  # overwrite: the umask's mode again
        for f in (prefix + ".index", prefix + ".data-00000-of-00001", tmp_path / "checkpoint"):
            assert _mode(f) == 0o664, f


@pytest.mark.skipif(not POSIX, reason="file modes are POSIX")
def test_graph_and_trace_files_get_the_umask_mode(tmp_path, umask):
    umask(0o027)
    fb.constant(1.0, name="c")
    path = write_graph(fb.get_default_graph(), str(tmp_path), "g.pbtxt")
    assert _mode(path) == 0o640
    with fb.profile() as prof, fb.Session() as sess:
        sess.run("c:0")
    assert _mode(prof.save_trace(tmp_path / "trace.json")) == 0o640


# ----------------------------------------------------- nothing left half-done
def test_an_exception_while_writing_leaves_the_old_file_and_no_temp(tmp_path):
    path = tmp_path / "a.bin"
    files.atomic_write(path, b"old")

    def interrupted(f):
        f.write(b"half of the new")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        files.atomic_write(path, interrupted)
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["a.bin"]
    assert not files._writing


def _failing_fsync(fd):
    raise OSError("simulated disk failure")


def test_write_graph_failing_midway_keeps_the_previous_file(tmp_path, monkeypatch):
    """write_graph wrote in place: a failure left a truncated file."""
    fb.constant(1.0, name="c")
    for as_text, name in ((True, "g.pbtxt"), (False, "g.pb")):
        path = write_graph(fb.get_default_graph(), str(tmp_path), name, as_text=as_text)
        before = Path(path).read_bytes()
        fb.constant(2.0, name="d")
        monkeypatch.setattr(os, "fsync", _failing_fsync)
        with pytest.raises(OSError, match="simulated"):
            write_graph(fb.get_default_graph(), str(tmp_path), name, as_text=as_text)
        monkeypatch.undo()
        assert Path(path).read_bytes() == before
        assert _temps(tmp_path) == []


def test_save_trace_failing_midway_keeps_the_previous_file(tmp_path, monkeypatch):
    """save_trace wrote in place: a failure left a truncated trace."""
    fb.constant(1.0, name="c")
    with fb.profile() as prof, fb.Session() as sess:
        sess.run("c:0")
    path = prof.save_trace(tmp_path / "trace.json")
    before = path.read_bytes()
    assert before.startswith(b'{"traceEvents"')
    monkeypatch.setattr(os, "fsync", _failing_fsync)
    with pytest.raises(OSError, match="simulated"):
        prof.save_trace(path, show_memory=True)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _temps(tmp_path) == []


# --------------------------------------------------------- stale temp files
def test_the_next_save_removes_temps_of_dead_writers(tmp_path):
    """A killed save left a hidden temp file as large as the checkpoint, forever."""
    dead = _temp_of(tmp_path, "model.ckpt.npz", _dead_pid())
    ours = _temp_of(tmp_path, "checkpoint", os.getpid())  # this process, not writing it now
    write_checkpoint(str(tmp_path / "other"), {"w": np.zeros(2, np.float32)})
    assert not os.path.exists(dead)
    assert not os.path.exists(ours)
    assert sorted(os.listdir(tmp_path)) == ["other.data-00000-of-00001", "other.index"]


def test_temps_of_live_writers_are_left_alone(tmp_path):
    live = _temp_of(tmp_path, "model.ckpt.npz", os.getppid())  # our parent is alive
    elsewhere = _temp_of(tmp_path, "x.npz", 12345, host="another-machine")
    old_elsewhere = _temp_of(tmp_path, "y.npz", 12345, host="another-machine", age_s=2 * 3600)
    lookalike = tmp_path / ".notes.flowbook-tmp"  # not a name atomic_write makes
    lookalike.write_bytes(b"")
    files.atomic_write(tmp_path / "a.txt", "a")
    assert os.path.exists(live) and os.path.exists(elsewhere) and lookalike.exists()
    assert not os.path.exists(old_elsewhere)  # untouched for two hours: abandoned


def test_temps_being_written_by_another_thread_are_left_alone(tmp_path):
    started, release = threading.Event(), threading.Event()

    def slow(f):
        f.write(b"partial")
        started.set()
        assert release.wait(30)

    writer = threading.Thread(target=files.atomic_write, args=(tmp_path / "big.bin", slow))
    writer.start()
    try:
        assert started.wait(30)
        (temp,) = _temps(tmp_path)
        files.atomic_write(tmp_path / "small.txt", "x")  # sweeps the folder
        assert _temps(tmp_path) == [temp]
    finally:
        release.set()
        writer.join(30)
    assert (tmp_path / "big.bin").read_bytes() == b"partial"
    assert _temps(tmp_path) == []


def test_temp_names_are_recognisable_and_parse():
    name = files.temp_name("model.ckpt-100.npz")
    assert name.startswith(".model.ckpt-100.npz.") and name.endswith(".flowbook-tmp")
    assert files._parse(name) == (files._HOST, os.getpid())
    assert files._parse(files.temp_name("x" * 300)) is not None  # long names are cut
    assert not files.is_temp_name("model.ckpt.npz")
    assert not files.is_temp_name(".a.b.notapid.c.flowbook-tmp")

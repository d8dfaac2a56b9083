"""``kill -9`` in the middle of saving: the last checkpoint survives, the temp file is swept up.

A child process saves a 4 MB variable in a loop (``model.ckpt-<i>`` holds
the value ``i`` everywhere, ``max_to_keep=2``); the test kills it with
SIGKILL at a random moment, then checks that the newest checkpoint the
``checkpoint`` file names loads and is whole (every element equal to its
step), that at most one temp file is left, and that the next save -- by this
process -- removes it.  In half the rounds the child's fsync sleeps first,
so the kill lands with a complete temp file not yet renamed; in the others
the moment is left to chance.  ``FLOWBOOK_KILL_ROUNDS`` asks for more
rounds; the seed is in every failure message.
"""

from __future__ import annotations

import os
import random
import re
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import flowbook as fb
from flowbook import train
from flowbook.platform import files
from flowbook.train.checkpoint_reader import read_checkpoint

N = 1 << 20  # float32 elements: a 4 MB checkpoint
ROUNDS = int(os.environ.get("FLOWBOOK_KILL_ROUNDS", "4"))
CHILD = """
import os, sys, time
import numpy as np
import flowbook as fb

directory, n, slow_fsync = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
if slow_fsync:  # the kill then lands between a temp file's last byte and its rename
    fsync = os.fsync
    os.fsync = lambda fd: (time.sleep(0.3), fsync(fd))[1]
w = fb.Variable(np.zeros(n, np.float32), name="w")
step = fb.placeholder(fb.float32, [], name="step")
set_w = fb.assign(w, fb.fill([n], step))
saver = fb.train.Saver(max_to_keep=2)
start = int(sys.argv[4])
with fb.Session() as sess:
    for i in range(start, start + 10_000):
        sess.run(set_w, {step: float(i)})
        saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=i)
        if i == start:
            print("saved", flush=True)
        if time.monotonic() > float(sys.argv[5]):
            break  # never outlive the test, whatever happens to it
"""


def _temps(d) -> list[str]:
    """Every file of ``d`` that is neither a checkpoint nor the state file."""
    stray = [
        n
        for n in os.listdir(d)
        if n != "checkpoint"
        and not re.fullmatch(r"model\.ckpt-\d+\.(npz|index|meta|data-\d{5}-of-\d{5})", n)
    ]
    assert all(files.is_temp_name(n) for n in stray), stray
    return sorted(stray)


def _wait_line(proc: subprocess.Popen, seconds: float) -> str:
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    return proc.stdout.readline().decode() if ready else ""


def _check_latest(d, note: str) -> int:
    """The newest checkpoint loads and is whole; returns its step."""
    latest = train.latest_checkpoint(str(d))
    assert latest is not None, note
    step = int(latest.rsplit("-", 1)[1])
    values = read_checkpoint(latest)
    assert set(values) == {"w"}, note
    assert values["w"].shape == (N,), note
    assert (values["w"] == step).all(), f"{note}: checkpoint {step} holds other values"
    return step


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs kill -9 (POSIX)")
def test_kill_9_during_saves_keeps_the_last_checkpoint_and_sweeps_the_temp(tmp_path):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    w = fb.Variable(np.zeros(N, np.float32), name="w")
    step_value = fb.placeholder(fb.float32, [])
    set_w = fb.assign(w, fb.fill([N], step_value))
    saver = train.Saver(max_to_keep=2)
    start, caught_mid_save = 1, 0
    with fb.Session() as sess:
        for round_ in range(ROUNDS):
            slow = round_ % 2 == 1
            note = f"seed {seed}, round {round_}{' (slow fsync)' if slow else ''}"
            deadline = time.monotonic() + 60
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    CHILD,
                    str(tmp_path),
                    str(N),
                    str(int(slow)),
                    str(start),
                    str(deadline),
                ],
                stdout=subprocess.PIPE,
            )
            try:
                assert _wait_line(proc, 60) == "saved\n", f"{note}: the child did not save"
                time.sleep(rng.uniform(0.05, 0.2) if slow else rng.uniform(0.0, 0.15))
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(30)
                proc.stdout.close()
            step = _check_latest(tmp_path, note)
            left = _temps(tmp_path)
            assert len(left) <= 1, f"{note}: temp files left: {left}"
            caught_mid_save += len(left)
            saver.restore(sess, train.latest_checkpoint(str(tmp_path)))
            assert (sess.run(w) == step).all(), note
            sess.run(set_w, {step_value: step + 1})
            saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step + 1)
            assert _temps(tmp_path) == [], f"{note}: the next save left {_temps(tmp_path)}"
            assert _check_latest(tmp_path, note) == step + 1
            start = step + 2
    assert caught_mid_save >= 1 or ROUNDS < 2, f"seed {seed}: no kill landed mid-save"

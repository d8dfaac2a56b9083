"""Hooks and monitored sessions: loops stop at the right step, checkpoints are saved and
restored across sessions, tensors are logged, NaN losses raise, OutOfRangeError ends a loop."""

from __future__ import annotations

import glob
import logging
import os

import numpy as np
import pytest

import flowbook as fb
from flowbook import train


def _model():
    """w pulled towards 3 by gradient descent, with a global step; returns (w, loss, train_op)."""
    w = fb.Variable(0.0, name="w")
    loss = fb.square(w - 3.0, name="loss")
    step = train.get_or_create_global_step()
    op = train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return w, loss, op


class Recorder(train.SessionRunHook):
    def __init__(self):
        self.calls = []

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")

    def before_run(self, run_context):
        self.calls.append("before_run")
        return train.SessionRunArgs({"step": train.get_global_step()})

    def after_run(self, run_context, run_values):
        self.calls.append(("after_run", int(run_values.results["step"])))

    def end(self, session):
        self.calls.append("end")


@pytest.mark.parametrize("kw, last", [({"last_step": 7}, 7), ({"num_steps": 4}, 4)])
def test_stop_at_step_hook_stops_the_loop_at_the_step(kw, last):
    with fb.Graph().as_default():
        _, _, op = _model()
        rec = Recorder()
        runs = 0
        with train.MonitoredSession(hooks=[train.StopAtStepHook(**kw), rec]) as sess:
            while not sess.should_stop():
                sess.run(op)
                runs += 1
            assert sess.should_stop()
        assert runs == last
        assert rec.calls[:2] == ["begin", "after_create_session"]
        assert rec.calls[-1] == "end"
        # the step fetched beside the train op is read before or after its increment
        seen = [c[1] for c in rec.calls if c[0] == "after_run"]
        assert len(seen) == last and seen[-1] in (last - 1, last)


def test_run_returns_the_callers_fetches_and_hook_feeds():
    with fb.Graph().as_default():
        x = fb.placeholder(fb.float32, [], name="x")
        y = x * 2.0
        train.get_or_create_global_step()
        hook = train.FeedFnHook(lambda: {x: 5.0})
        with train.MonitoredSession(hooks=[hook]) as sess:
            assert sess.run({"y": y}) == {"y": 10.0}
            with pytest.raises(RuntimeError, match="fed by"):
                sess.run(y, feed_dict={x: 1.0})
        assert sess.should_stop()  # closed
        assert fb.get_default_graph().finalized


def test_checkpoints_saved_and_restored_across_two_training_sessions(tmp_path):
    ckpt = str(tmp_path)
    with fb.Graph().as_default():
        w, _, op = _model()
        hooks = [train.StopAtStepHook(last_step=5)]
        with train.MonitoredTrainingSession(
            checkpoint_dir=ckpt, hooks=hooks, save_checkpoint_steps=2, save_summaries_steps=None
        ) as sess:
            while not sess.should_stop():
                sess.run(op)
            w_after = float(sess.run(w))
        saved = sorted(
            int(p.split("-")[-1].split(".")[0]) for p in glob.glob(f"{ckpt}/model.ckpt-*.index")
        )
        assert saved == [0, 2, 4, 5]  # at start, every 2 steps, and at the end
        assert train.latest_checkpoint(ckpt).endswith("model.ckpt-5")
        assert os.path.exists(os.path.join(ckpt, "graph.pbtxt"))
    with fb.Graph().as_default():
        w, _, op = _model()
        with train.MonitoredTrainingSession(
            checkpoint_dir=ckpt,
            hooks=[train.StopAtStepHook(last_step=8)],
            save_checkpoint_secs=None,
            save_summaries_steps=None,
        ) as sess:
            assert float(sess.run(w)) == pytest.approx(w_after)  # restored, not re-initialised
            assert int(sess.run(train.get_global_step())) == 5
            n = 0
            while not sess.should_stop():
                sess.run(op)
                n += 1
        assert n == 3


def test_training_session_writes_summaries(tmp_path):
    with fb.Graph().as_default():
        _, loss, op = _model()
        fb.summary.scalar("train_loss", loss)
        with train.MonitoredTrainingSession(
            checkpoint_dir=str(tmp_path),
            hooks=[train.StopAtStepHook(last_step=6)],
            save_summaries_steps=2,
            log_step_count_steps=None,
        ) as sess:
            while not sess.should_stop():
                sess.run(op)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    steps = [e.step for e in acc.Scalars("train_loss")]
    assert steps == [1, 3, 5]  # as TF: the step after the run that computed them, every 2


def test_logging_tensor_hook_logs_every_n_iter_and_at_end(caplog):
    with fb.Graph().as_default():
        _, loss, op = _model()
        hook = train.LoggingTensorHook({"loss": loss, "w": "w:0"}, every_n_iter=2, at_end=True)
        hooks = [hook, train.StopAtStepHook(last_step=5)]
        with (
            caplog.at_level(logging.INFO, logger="flowbook"),
            train.MonitoredSession(hooks=hooks) as sess,
        ):
            while not sess.should_stop():
                sess.run(op)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("loss = ")]
    assert len(lines) == 4  # iterations 0, 2, 4, and the end
    assert lines[0].startswith("loss = 9.0, w = ")
    assert "(" in lines[1] and "sec)" in lines[1]


def test_nan_tensor_hook_raises_on_a_nan_loss():
    with fb.Graph().as_default():
        x = fb.placeholder(fb.float32, [])
        w = fb.Variable(1.0, name="w")
        loss = w * x
        train.get_or_create_global_step()
        rec = Recorder()
        nan_error = pytest.raises(train.NanLossDuringTrainingError, match="NaN loss during")
        with nan_error, train.MonitoredSession(hooks=[train.NanTensorHook(loss), rec]) as sess:
            sess.run(loss, {x: 1.0})
            sess.run(loss, {x: np.nan})
        assert "end" not in rec.calls  # hooks do not end after an error
        with train.MonitoredSession(hooks=[train.NanTensorHook(loss, fail_on_nan_loss=False)]) as s:
            s.run(loss, {x: np.nan})
            assert s.should_stop()


def test_out_of_range_error_ends_the_loop_normally():
    with fb.Graph().as_default():
        train.get_or_create_global_step()
        n = fb.Variable(0, name="n")
        inc = fb.assign_add(n, 1)
        x = fb.placeholder(fb.int32, [])
        data = iter(range(3))

        def next_batch():  # an input pipeline that runs dry, as an iterator op would
            try:
                return {x: next(data)}
            except StopIteration:
                raise fb.errors.OutOfRangeError(None, None, "End of sequence") from None

        final = train.FinalOpsHook(n.value())
        fetch = x + 0 * inc
        got = []
        with train.MonitoredSession(hooks=[train.FeedFnHook(next_batch), final]) as sess:
            while not sess.should_stop():
                got.append(int(sess.run(fetch)))
        assert got == [0, 1, 2]
        assert final.final_ops_values == 3  # hooks ended normally


def test_singular_session_raw_session_and_scaffold_init_fn(tmp_path):
    with fb.Graph().as_default():
        w = fb.Variable(0.0, name="w")
        set_w = fb.assign(w, 7.0)
        scaffold = train.Scaffold(init_fn=lambda scaffold, sess: sess.run(set_w))
        with train.SingularMonitoredSession(scaffold=scaffold) as sess:
            assert float(sess.raw_session().run(w)) == 7.0
            assert scaffold.saver is fb.get_collection(fb.GraphKeys.SAVERS)[0]
            assert scaffold.init_op is not None and scaffold.ready_op is not None
            path = scaffold.saver.save(sess.raw_session(), str(tmp_path / "m.ckpt"))
    with fb.Graph().as_default():
        w = fb.Variable(0.0, name="w")
        with train.SingularMonitoredSession(checkpoint_filename_with_path=path) as sess:
            assert float(sess.run(w)) == 7.0


def test_scaffold_not_ready_is_reported():
    with fb.Graph().as_default():
        fb.Variable(0.0, name="w")
        scaffold = train.Scaffold(init_op=fb.no_op())
        with pytest.raises(RuntimeError, match="w"):
            train.MonitoredSession(train.ChiefSessionCreator(scaffold))


def test_checkpoint_saver_listener_and_step_counter(tmp_path, caplog):
    class Listener(train.CheckpointSaverListener):
        def __init__(self):
            self.saves = []

        def after_save(self, session, step):
            self.saves.append(step)
            return step >= 3

    with fb.Graph().as_default():
        _, _, op = _model()
        listener = Listener()
        saver_hook = train.CheckpointSaverHook(
            str(tmp_path), save_steps=3, listeners=[listener], saver=train.Saver()
        )
        counter = train.StepCounterHook(every_n_steps=2, output_dir=str(tmp_path / "rate"))
        with (
            caplog.at_level(logging.INFO, logger="flowbook"),
            train.MonitoredSession(hooks=[saver_hook, counter]) as sess,
        ):
            while not sess.should_stop():
                sess.run(op)
        assert listener.saves == [0, 3]  # stopped by the listener after step 3
    assert any("global_step/sec" in r.getMessage() for r in caplog.records)


def test_second_or_step_timer_by_seconds(monkeypatch):
    now = [100.0]
    monkeypatch.setattr("time.time", lambda: now[0])
    t = train.SecondOrStepTimer(every_secs=5)
    assert t.should_trigger_for_step(1)
    t.update_last_triggered_step(1)
    now[0] = 103.0
    assert not t.should_trigger_for_step(2)
    now[0] = 106.0
    assert t.should_trigger_for_step(3)
    assert t.update_last_triggered_step(3) == (6.0, 2)
    with pytest.raises(ValueError):
        train.SecondOrStepTimer()


def test_basic_train_loop_runs_until_the_supervisor_stops():
    class Supervisor:
        def __init__(self):
            self.n = 0

        def managed_session(self, master):
            return fb.Session()

        def should_stop(self):
            return self.n >= 4

    sup = Supervisor()

    def step(sess, k, by=1):
        sup.n += k * by

    with fb.Graph().as_default():
        train.basic_train_loop(sup, step, args=(1,), kwargs={"by": 2})
    assert sup.n == 4


def test_hooks_need_a_global_step_and_valid_arguments():
    with fb.Graph().as_default(), pytest.raises(RuntimeError, match="Global step"):
        train.StopAtStepHook(last_step=1).begin()
    with pytest.raises(ValueError):
        train.StopAtStepHook()
    with pytest.raises(ValueError):
        train.LoggingTensorHook(["a:0"])
    with pytest.raises(ValueError):
        train.MonitoredTrainingSession(is_chief=False)

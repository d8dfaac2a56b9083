"""Messages from a view, read strictly: every bad field gets a reply, never an exception."""

from __future__ import annotations

import math

import pytest

from flowbook.notebook import messages
from flowbook.notebook.history import History, answer_run

BAD = [
    (None, "must be an object"),
    ([], "must be an object"),
    ({}, "must say its action"),
    ({"action": 3}, "must say its action"),
    ({"action": "launch"}, "unknown action"),
    ({"action": "x" * 10_000}, "unknown action"),
    ({"action": "history_run"}, "must be a number"),
    ({"action": "history_run", "seq": "3"}, "must be a number"),
    ({"action": "history_run", "seq": True}, "must be a number"),
    ({"action": "history_run", "seq": math.nan}, "whole number"),
    ({"action": "history_run", "seq": math.inf}, "whole number"),
    ({"action": "history_run", "seq": -math.inf}, "whole number"),
    ({"action": "history_run", "seq": 2.5}, "whole number"),
    ({"action": "history_run", "seq": 0}, "whole number"),
    ({"action": "history_run", "seq": -4}, "whole number"),
    ({"action": "history_run", "seq": 10**30}, "whole number"),
    ({"action": "run_to", "node": 7}, "must be text"),
    ({"action": "run_to", "node": "n" * (messages.MAX_NAME + 1)}, "too long"),
]


@pytest.mark.parametrize("data,says", BAD, ids=[f"bad{k}" for k in range(len(BAD))])
def test_a_bad_message_is_refused_with_a_reason(data, says):
    got = messages.read(data)
    assert isinstance(got, str) and says in got, got


@pytest.mark.parametrize(
    "data,action",
    [
        ({"action": "history_run", "seq": 3}, messages.Action("history_run", seq=3)),
        ({"action": "history_run", "seq": 3.0}, messages.Action("history_run", seq=3)),
        ({"action": "step"}, messages.Action("step")),
        ({"action": "run_to", "node": "MatMul"}, messages.Action("run_to", node="MatMul")),
        ({"action": "run_to", "node": ""}, messages.Action("run_to")),
    ],
)
def test_good_messages_read_as_actions(data, action):
    assert messages.read(data) == action


def test_answer_run_never_raises_for_a_run_number():
    for seq in (math.nan, math.inf, "3", None, True, 2**70):
        assert answer_run(History(), seq) == {"history_run": {"seq": seq}}


def test_the_widget_replies_to_a_bad_message(monkeypatch, tmp_path):
    import flowbook as fb
    from flowbook.notebook import widget as widget_module

    (tmp_path / "graph-widget-loader.js").write_text("export default { render() {} };\n")
    monkeypatch.setattr(widget_module, "STATIC", tmp_path)
    w = widget_module.GraphWidget(fb.Graph())
    sent = []
    monkeypatch.setattr(w, "send", sent.append)
    try:
        w._on_action(w, {"action": "history_run", "seq": math.nan}, [])
        w._on_action(w, "garbage", [])
        assert [m["message"] for m in sent] == [
            "a run number must be a whole number from 1, not nan",
            "a message must be an object, not str",
        ]
    finally:
        w.close()

"""Fuzzing the messages a view may send: any JSON value gets an action or a reply, never an
exception in the kernel."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowbook.notebook import messages
from tests.fuzzing import FUZZ

pytestmark = pytest.mark.fuzz

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=50),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "action": st.sampled_from(["step", "run_to", "cont", "reset", "history_run", "x"]) | JSON,
        "node": JSON,
        "seq": JSON,
    },
)


@FUZZ
@given(data=JSON | FIELDS)
def test_any_message_reads_as_an_action_or_a_reason(data):
    got = messages.read(data)
    assert isinstance(got, str | messages.Action)
    if isinstance(got, messages.Action):
        assert got.kind in messages.STEPPER_ACTIONS | {"history_run"}
        assert got.seq is None or (isinstance(got.seq, int) and got.seq >= 1)
        assert got.node is None or isinstance(got.node, str)

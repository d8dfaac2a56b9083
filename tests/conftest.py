"""Shared fixtures: every test builds in a fresh default graph."""

from __future__ import annotations

import numpy as np
import pytest

import flowbook as fb


@pytest.fixture(autouse=True)
def fresh_graph():
    """Each test starts with an empty default graph and no default session."""
    fb.reset_default_graph()
    yield fb.get_default_graph()
    fb.reset_default_graph()


def _mixed_device_model():
    """x (fed) -> layer/MatMul, layer/h on the GPU -> total on the CPU; loss on the GPU.

    Returns ``(graph, x, total, loss)``; build it while a (simulated) GPU is registered.
    """
    g = fb.Graph()
    with g.as_default():
        x = fb.placeholder(fb.float32, [None, 3], name="x")
        with fb.name_scope("layer"):
            w = fb.Variable(np.ones((3, 4), np.float32), name="w")
            h = fb.nn.relu(fb.matmul(x, w), name="h")
        with fb.device("/cpu:0"):
            total = fb.reduce_sum(h, name="total")
        loss = fb.reduce_mean(h, name="loss")
    return g, x, total, loss


@pytest.fixture
def mixed_devices():
    """The builder of a small model split between the GPU and the CPU (for copy-node tests)."""
    return _mixed_device_model


@pytest.fixture
def view():
    """A FakeView (tests/live_fakes.py); ``view.attach(graph)`` shows ``graph`` in it."""
    from flowbook.notebook import live  # the live graph loads only where a test needs it
    from flowbook.runtime import session as session_module
    from tests.live_fakes import FakeView

    hubs: list = []
    v = FakeView()

    def attach(graph):
        hub = live.live_graph(graph)
        hub.add_view(v)
        hubs.append(hub)
        return hub

    v.attach = attach
    yield v
    for hub in hubs:
        hub.remove_view(v)
    assert live.WATCHER not in session_module._observers

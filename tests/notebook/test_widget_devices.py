"""Device placement and copy nodes in the live views' run state, on a simulated GPU.

A run's plan may hold copy nodes (``x/_copy_to_GPU_0``) that are not ops of
the graph; the run state names them in ``pruned``/``done``/``times_us`` like
any op, describes them in ``copies`` (source, destination device, readers),
and maps every op to the device it ran on in ``placement`` (empty when the
plan ran on the CPU only).  Nothing in the live path may trip over a name
that is not in the graph: errors raised in a copy, a selected copy, a
stepper running to one.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import flowbook as fb
from flowbook.framework import devices
from flowbook.framework.errors import ResourceExhaustedError
from flowbook.notebook import live, watch
from flowbook.notebook import widget as widget_module
from flowbook.runtime.gpu_sim import SimulatedGPU, simulate_gpu

CPU_ONLY = fb.ConfigProto(device_count={"GPU": 0})
MB = 1_000_000


class FakeView:
    """Records what a LiveGraph pushes (each state must be JSON-able as is)."""

    def __init__(self) -> None:
        self.got: list[dict] = []

    def push(self, state: dict) -> None:
        json.dumps(state)
        self.got.append(state)

    def last(self, key: str) -> dict:
        return next(s[key] for s in reversed(self.got) if key in s)


@pytest.fixture
def shown():
    """``shown(graph)``: a FakeView on ``graph``'s LiveGraph, removed after the test."""
    attached: list[tuple[live.LiveGraph, FakeView]] = []

    def attach(graph: fb.Graph) -> FakeView:
        view = FakeView()
        hub = live.live_graph(graph)
        hub.add_view(view)
        attached.append((hub, view))
        return view

    yield attach
    for hub, view in attached:
        hub.remove_view(view)


@pytest.fixture
def gpu():
    with simulate_gpu() as device:
        yield device


def test_the_run_state_lists_the_copies_and_where_each_op_ran(gpu, shown, mixed_devices):
    g, x, total, loss = mixed_devices()
    view = shown(g)
    with g.as_default(), fb.Session(graph=g) as s:
        s.run(fb.global_variables_initializer())
        s.run([total, loss], {x: np.ones((2, 3), np.float32)})
    live.FLUSHER.flush_now()
    run = view.last("run")
    copies = {c["name"]: c for c in run["copies"]}
    assert copies["x/_copy_to_GPU_0"] == {
        "name": "x/_copy_to_GPU_0",
        "op": "_CopyHostToDevice",
        "src": "x",
        "tensor": "x:0",
        "src_device": "CPU:0",
        "dst_device": "GPU:0",
        "readers": ["layer/MatMul"],
        "fetch": False,
    }
    down = copies["layer/h/_copy_to_CPU_0"]  # read by total, on the CPU; not fetched
    assert (down["op"], down["readers"], down["fetch"]) == ("_CopyDeviceToHost", ["total"], False)
    fetched = copies["loss/_copy_to_CPU_0"]  # serves the fetch only
    assert (fetched["src"], fetched["readers"], fetched["fetch"]) == ("loss", [], True)
    assert len(copies) == 3
    # copy nodes are run ops like any other: pruned, done, timed, with a value
    assert set(copies) <= set(run["pruned"]) and run["done"] == run["pruned"]
    assert set(copies) <= set(run["times_us"])
    assert run["values"]["x/_copy_to_GPU_0"] == "float32 (2, 3) [[1. 1. 1.] [1. 1. 1.]]"
    # placement: every op of the run, copies included; fed ops are not run
    placement = run["placement"]
    assert set(placement) == set(run["pruned"]) and "x" not in placement
    assert placement["layer/MatMul"] == placement["loss"] == "GPU:0"
    assert placement["total"] == "CPU:0"
    assert placement["x/_copy_to_GPU_0"] == "GPU:0"  # the GPU side runs a copy
    # the widget's trait carries the same
    hub = live.live_graph(g)
    assert hub.state(("run",))["run"]["copies"] == run["copies"]


def test_a_plan_on_the_cpu_only_sends_no_placement(gpu, shown, mixed_devices):
    g, x, total, loss = mixed_devices()
    view = shown(g)
    with g.as_default(), fb.Session(graph=g, config=CPU_ONLY) as s:
        s.run(fb.global_variables_initializer())
        s.run([total, loss], {x: np.ones((2, 3), np.float32)})
    live.FLUSHER.flush_now()
    run = view.last("run")
    assert run["placement"] == {} and run["copies"] == []
    assert not any("_copy" in n for n in run["pruned"])
    idle = live.LiveGraph(fb.Graph()).run_state()
    assert idle["placement"] == {} and idle["copies"] == []


def test_an_init_run_wholly_on_the_gpu_still_says_so(gpu, shown, mixed_devices):
    g, *_ = mixed_devices()
    view = shown(g)
    with g.as_default(), fb.Session(graph=g) as s:
        s.run(fb.global_variables_initializer())
    live.FLUSHER.flush_now()
    run = view.last("run")
    assert run["copies"] == [] and set(run["placement"].values()) == {"GPU:0"}


def test_placement_and_copies_are_worked_out_once_per_plan(gpu, shown, mixed_devices, monkeypatch):
    calls = []
    real = watch.device_state
    monkeypatch.setattr(watch, "device_state", lambda plan: calls.append(plan) or real(plan))
    g, x, total, loss = mixed_devices()
    view = shown(g)
    with g.as_default(), fb.Session(graph=g) as s:
        s.run(fb.global_variables_initializer())
        live.FLUSHER.flush_now()
        for k in range(6):
            s.run([total, loss], {x: np.full((2, 3), k, np.float32)})
            live.FLUSHER.flush_now()
    assert len(calls) == 2  # the init plan and the model's, each once
    assert len(view.last("run")["copies"]) == 3


def test_copies_between_two_gpus(gpu, shown):
    second = devices.register_device(SimulatedGPU(1))
    try:
        g = fb.Graph()
        with g.as_default():
            x = fb.placeholder(fb.float32, [None, 3], name="x")
            a = fb.multiply(x, 2.0, name="a")
            with fb.device("/gpu:1"):
                b = fb.add(a, 1.0, name="b")
        view = shown(g)
        with g.as_default(), fb.Session(graph=g) as s:
            s.run(b, {x: np.ones((2, 3), np.float32)})
        live.FLUSHER.flush_now()
    finally:
        second.remove()
    run = view.last("run")
    copies = {c["name"]: c for c in run["copies"]}
    across = copies["a/_copy_to_GPU_1"]
    assert (across["op"], across["src_device"], across["dst_device"]) == (
        "_CopyDeviceToDevice",
        "GPU:0",
        "GPU:1",
    )
    assert across["readers"] == ["b"] and not across["fetch"]
    assert run["placement"]["a"] == "GPU:0" and run["placement"]["b"] == "GPU:1"


@pytest.mark.parametrize("live_ns", [None, 0], ids=["first-run", "op-by-op"])
def test_an_error_in_a_copy_node_names_it(shown, monkeypatch, live_ns):
    if live_ns is not None:
        monkeypatch.setattr(watch, "LIVE_NS", live_ns)
    with simulate_gpu(memory_limit=1 * MB):
        g = fb.Graph()
        with g.as_default():
            x = fb.placeholder(fb.float32, [None, None], name="x")
            y = fb.reduce_sum(x * 2.0, name="y")
        view = shown(g)
        with g.as_default(), fb.Session(graph=g) as s:
            if live_ns is not None:
                s.run(y, {x: np.ones((2, 2), np.float32)})  # then watched op by op
            with pytest.raises(ResourceExhaustedError) as info:
                s.run(y, {x: np.ones((1000, 1000), np.float32)})  # 4 MB up: past the limit
            assert info.value.op.name == "x/_copy_to_GPU_0"
            live.FLUSHER.flush_now()
            run = view.last("run")
            assert run["phase"] == "error" and run["error"]["node"] == "x/_copy_to_GPU_0"
            assert "OOM" in run["error"]["message"] and not run["error"]["nan"]
            assert "x/_copy_to_GPU_0" not in run["done"]
            assert "x/_copy_to_GPU_0" in {c["name"] for c in run["copies"]}
            assert run["placement"]["x/_copy_to_GPU_0"] == "GPU:0"
            assert s.run(y, {x: np.ones((2, 2), np.float32)}) == 8.0  # the session goes on
            live.FLUSHER.flush_now()
            assert view.last("run")["error"] is None


def test_a_widget_can_select_a_copy_node(gpu, mixed_devices, tmp_path, monkeypatch):
    (tmp_path / "graph-widget.js").write_text("export default { render() {} };\n")
    (tmp_path / "graph-widget-loader.js").write_text("export default { render() {} };\n")
    (tmp_path / "graph-widget.css").write_text("\n")
    monkeypatch.setattr(widget_module, "STATIC", tmp_path)
    g, x, total, loss = mixed_devices()
    w = widget_module.GraphWidget(g)
    try:
        with g.as_default(), fb.Session(graph=g) as s:
            s.run(fb.global_variables_initializer())
            s.run([total, loss], {x: np.ones((2, 3), np.float32)})
        live.FLUSHER.flush_now()
        assert len(w.run["copies"]) == 3
        w.selected = "loss/_copy_to_CPU_0"  # not an op of the graph
        assert w.selected_op is None
        assert w.run["values"]["loss/_copy_to_CPU_0"] == "float32 () 3."
        w.show_times({"loss/_copy_to_CPU_0": 2.0})
        assert w.run["times_us"] == {"loss/_copy_to_CPU_0": 2.0}
    finally:
        w.close()


def test_the_stepper_state_has_the_copies_and_runs_to_one(gpu, shown, mixed_devices):
    g, x, total, loss = mixed_devices()
    shown(g)
    with g.as_default(), fb.Session(graph=g) as s:
        s.run(fb.global_variables_initializer())
        st = fb.debug.Stepper(s, [total, loss], {x: np.ones((2, 3), np.float32)})
        hub = live.follow_stepper(st)
        state = hub.stepper_state()
        assert {c["name"] for c in state["copies"]} == {
            "x/_copy_to_GPU_0",
            "layer/h/_copy_to_CPU_0",
            "loss/_copy_to_CPU_0",
        }
        assert state["placement"]["total"] == "CPU:0"
        assert "x/_copy_to_GPU_0" in state["pruned"]
        assert hub.act("run_to", "x/_copy_to_GPU_0") == ""
        assert hub.step_done[-1] == "x/_copy_to_GPU_0"
        assert hub.stepper_state()["values"]["x/_copy_to_GPU_0"].startswith("float32 (2, 3)")
        assert hub.act("cont") == ""
        assert "loss/_copy_to_CPU_0" in hub.step_done
        hub.stepper = None

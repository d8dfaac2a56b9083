"""The op registry itself: every op is complete, names are unique, declarations are sane."""

from __future__ import annotations

import pytest

import flowbook as fb
from flowbook.framework.registry import NOT_DIFFERENTIABLE, OPS, OpDef, Out, register, register_op

ALL = sorted(OPS.values(), key=lambda d: d.name)


@pytest.mark.parametrize("opdef", ALL, ids=lambda d: d.name)
def test_every_op_is_fully_declared(opdef):
    assert isinstance(opdef, OpDef)
    assert callable(opdef.infer)
    assert opdef.kernel is not None or opdef.bind is not None
    assert opdef.grad is NOT_DIFFERENTIABLE or callable(opdef.grad), (
        f"{opdef.name} has no gradient declared: give it one or declare it NOT_DIFFERENTIABLE"
    )
    assert all(isinstance(n, str) and n for n in opdef.inputs)
    lists = sum(n.startswith("*") for n in opdef.inputs)
    assert lists <= 1 or "N" in opdef.attrs  # several lists share one count N (DynamicStitch)
    assert opdef.resource in (None, "variable", "rng", "iterator", "container", "rendezvous")
    if opdef.resource in ("rng", "iterator", "rendezvous"):
        assert opdef.stateful


def test_registering_a_name_twice_is_an_error():
    with pytest.raises(KeyError, match="already registered"):
        register(
            OpDef("Add", ("x", "y"), (), lambda x, y: Out(x.dtype, x._shape), lambda xp, x, y: x)
        )
    try:

        @register_op("TestOnlyTwice", ("x",), infer=lambda x: Out(x.dtype, x._shape))
        def twice(xp, x):
            return x * 2

        with fb.Session() as s:
            t = fb.get_default_graph().create_op("TestOnlyTwice", [fb.constant(2.0)]).outputs[0]
            assert s.run(t) == 4.0
    finally:
        del OPS["TestOnlyTwice"]


def test_unknown_op_type_is_a_clear_error():
    with pytest.raises(fb.errors.NotFoundError, match="Op type not registered 'Nope'"):
        fb.get_default_graph().create_op("Nope", [])


def test_missing_gradient_names_the_op(monkeypatch):
    x = fb.constant(2.0)
    y = fb.square(x, name="sq")
    monkeypatch.setattr(OPS["Square"], "grad", None)
    with pytest.raises(
        LookupError, match="No gradient defined for operation 'sq' \\(op type: Square\\)"
    ):
        fb.gradients(y, [x])

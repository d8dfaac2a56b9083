"""The global step: one int64 variable that counts training steps (TF1's training_util).

``get_or_create_global_step()`` makes a non-trainable scalar Variable named
``global_step`` in the GLOBAL_VARIABLES and GLOBAL_STEP collections; pass it
to ``minimize(loss, global_step=...)`` and each run of the train op adds one,
after the updates.

    >>> import flowbook as fb
    >>> from flowbook import train
    >>> with fb.Graph().as_default():
    ...     step = train.get_or_create_global_step()
    ...     step.op.name, step.dtype.name, train.get_global_step() is step
    ('global_step', 'int64', True)
"""

from __future__ import annotations

import logging
from typing import Any

from flowbook.framework import dtypes
from flowbook.framework.graph import Graph, GraphKeys, get_default_graph
from flowbook.framework.tensor import Tensor
from flowbook.variables.variables import Variable

_log = logging.getLogger("flowbook")


def get_global_step(graph: Graph | None = None) -> Any:
    """The global step of ``graph`` (default graph): its GLOBAL_STEP collection's one member,
    else the tensor ``global_step:0``, else None.
    """
    graph = graph or get_default_graph()
    found = graph.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) > 1:
        _log.error("Multiple tensors in global_step collection.")
        return None
    if found:
        step = found[0]
    else:
        try:
            step = graph.get_tensor_by_name("global_step:0")
        except (KeyError, ValueError):
            return None
    assert_global_step(step)
    return step


def create_global_step(graph: Graph | None = None) -> Variable:
    """Create the global step of ``graph``: an int64 scalar Variable starting at 0.

    ValueError if the graph has one already.
    """
    graph = graph or get_default_graph()
    if get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    with graph.as_default(), graph.control_dependencies(None), graph.name_scope(None):
        return Variable(
            0,
            trainable=False,
            name=GraphKeys.GLOBAL_STEP,
            dtype=dtypes.int64,
            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP],
        )


def get_or_create_global_step(graph: Graph | None = None) -> Any:
    """The global step of ``graph``, created first if it has none."""
    graph = graph or get_default_graph()
    step = get_global_step(graph)
    if step is None:
        step = create_global_step(graph)
    return step


def assert_global_step(global_step_tensor: Any) -> None:
    """TypeError unless ``global_step_tensor`` is an integer scalar Variable or Tensor."""
    if not isinstance(global_step_tensor, Variable | Tensor):
        raise TypeError(
            f'Existing "global_step" must be a Variable or Tensor: {global_step_tensor}.'
        )
    if not global_step_tensor.dtype.base_dtype.is_integer:
        raise TypeError(
            f'Existing "global_step" does not have integer type: {global_step_tensor.dtype}'
        )
    shape = global_step_tensor.get_shape()
    if shape.ndims != 0 and shape.is_fully_defined():
        raise TypeError(f'Existing "global_step" is not scalar: {shape}')


def global_step(sess: Any, global_step_tensor: Any) -> int:
    """The global step's value in ``sess``, as a Python int."""
    return int(sess.run(global_step_tensor))

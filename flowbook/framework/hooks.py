"""Late-bound hooks: the few places where a low layer calls a higher one.

Modules import only downward (the layers are listed, and checked, in
``tests/test_package_layers.py``): dtypes, shapes, errors, then graph, tensor,
registry, then ops, the run core, session, gradients and train, debug and
profiling, and last the notebook.  A handful of TF1 methods on low-level
classes still need something built higher up: ``Tensor.eval`` needs a
Session, ``Graph.as_graph_def`` the GraphDef writer.  Each such reach is a
named :class:`Hook` here, and nowhere else:

- ``session_for``: ``Tensor.eval``, ``Operation.run`` and ``Variable.load``
  find their session; filled by ``flowbook.runtime.session``;
- ``as_graph_def``: ``Graph.as_graph_def``; filled by ``flowbook.graph_io.graph_def``;
- ``op_def_message``: ``Operation.op_def``, TensorFlow's ``OpDef`` message of the op's type;
  filled by ``flowbook.graph_io.graph_def``;
- ``import_graph_def``: ``flowbook.graph_io.graph_def.import_graph_def``; filled by
  ``flowbook.graph_io.graph_def_import``;
- ``find_gpus``: the GPUs ``flowbook.framework.devices`` lists; filled by ``flowbook.runtime.gpu``;
- ``cluster_session``: the session class ``tf.Session("dask://...")`` makes; filled by
  ``flowbook.distributed``.

One more reach has a registry of its own, beside the protocol it serves:
``flowbook.runtime.observers.observer_factory``, through which ``flowbook.debug`` and
``flowbook.profiling.tracing`` give the session the observers a run's ``RunOptions``
or the session's ``ConfigProto`` ask for (the NaN guard, a trace).

The low module calls the slot (``hooks.session_for(graph, session)``); the
high module fills it once, when it is imported (``hooks.as_graph_def.fill(fn)``).
``import flowbook`` imports every module that fills one (the namespaces it
leaves for first use fill none), so in practice every slot is filled; calling an empty one raises ``RuntimeError`` naming the module that
fills it.  A hook is a plain attribute holder, not a registry: one function
per slot, and filling it again replaces it (a reloaded module refills).

    >>> h = Hook("greet", "flowbook.nowhere")
    >>> h("ann")
    Traceback (most recent call last):
    RuntimeError: flowbook.framework.hooks.greet is empty: importing flowbook.nowhere fills it (import flowbook does)
    >>> _ = h.fill(lambda name: f"hi {name}")
    >>> h("ann")
    'hi ann'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Hook:
    """One named slot holding the function a higher module provides.

    >>> square = Hook("square", "a test")
    >>> square.filled, square.fill(lambda x: x * x)(3), square.filled
    (False, 9, True)
    """

    __slots__ = ("fn", "name", "provider")

    def __init__(self, name: str, provider: str) -> None:
        self.name = name  # the slot's name, as in ``flowbook.framework.hooks.<name>``
        self.provider = provider  # the module whose import fills it (for the error)
        self.fn: Callable[..., Any] | None = None  # the function, once filled

    @property
    def filled(self) -> bool:
        return self.fn is not None

    def fill(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Put ``fn`` in the slot (replacing what was there); returns ``fn``."""
        self.fn = fn
        return fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self.fn
        if fn is None:
            raise RuntimeError(
                f"flowbook.framework.hooks.{self.name} is empty: importing {self.provider} fills it "
                "(import flowbook does)"
            )
        return fn(*args, **kwargs)

    def __repr__(self) -> str:
        state = "filled" if self.fn is not None else f"empty until {self.provider} is imported"
        return f"<flowbook.framework.hooks.{self.name}: {state}>"


# (graph, session or None) -> the session to run in: ``session``, else the default one; errors as TF1
session_for = Hook("session_for", "flowbook (its __init__, from flowbook.runtime.session)")
# (graph, from_version=None, add_shapes=False) -> TensorFlow's GraphDef proto of ``graph``
as_graph_def = Hook("as_graph_def", "flowbook.graph_io.graph_def")
# (op type) -> TensorFlow's OpDef message of that registered op type (built once per type)
op_def_message = Hook("op_def_message", "flowbook.graph_io.graph_def")
# (graph_def, input_map, return_elements, name, op_dict, producer_op_list) -> TF1's import_graph_def
import_graph_def = Hook("import_graph_def", "flowbook.graph_io.graph_def_import")
# () -> the GPUs CuPy finds in this process (found once; [] without CuPy or a GPU)
find_gpus = Hook("find_gpus", "flowbook.runtime.gpu")
# (cls, target) -> the class tf.Session(target) makes: cls, or for a Dask target
# ("dask://host:port", a distributed.Client) the session that runs on the cluster
cluster_session = Hook("cluster_session", "flowbook.distributed")

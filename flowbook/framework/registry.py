"""The op registry: every op is declared once, here described, filled by ``ops/``.

An :class:`OpDef` holds all that flowbook knows of an op type: its inputs and
attrs, ``infer`` (static dtype and shape of the outputs, run when a cell builds
the op, so bad shapes fail at the line that wrote them), the kernel, how heavy
it is, whether it is stateful and its gradient.

The kernel is one body for every device, written against the array module
``xp`` (numpy on the CPU, CuPy on the GPU): ``kernel(xp, *arrays, **attrs)``
returns an array, or a tuple of arrays for an op with several outputs.  It
never sees a Tensor, Graph or Device.  ``bind(xp, **attrs)`` may return the
callable the executor should call with the arrays alone (the element-wise
tables bind straight to ``xp.add``...); by default it is
``partial(kernel, xp, **attrs)``.  Stateful ops name the session state they
use (``resource="variable"``, ``"rng"``, ``"iterator"`` or ``"container"``); the
session binds it as the ``var=``, ``rng=``, ``iterator=`` or ``cell=`` keyword.
An op that may wait (a queue's enqueue or dequeue) says ``blocking=True``:
its kernel may return a ``flowbook.state.pending.Pending``, and a plan holding one
runs on the scheduler, which parks it.  A variable's op outputs the variable itself; ops that
update it declare that input in ``ref_inputs``, every other consumer gets its
value, read when the consumer runs (TF1's reference semantics).  An op
that cannot run on a GPU says ``host_only=True`` (ops on strings are host
only without saying so); ``flowbook.runtime.placement`` keeps it on the CPU.  Two
more declarations tell placement where an input's value is read, as TF's
``HostMemory`` does: ``host_inputs`` are small shape-like int arguments the
kernel turns into Python ints (``Reshape``'s shape, a reduction's axes), so
on a GPU they stay in host memory and are never uploaded; ``meta_inputs``
are inputs of which the kernel reads only the shape and dtype (``Shape``),
so they are never copied between devices at all.  A kernel that says
``takes_out=True`` takes an ``out=`` array of its result's shape and dtype
and writes its result there (the element-wise ufuncs, ``Relu``,
``BiasAdd``): the memory plan (``flowbook.runtime.memory_plan``) hands it the
buffer of an input that dies there.

Two more groups of fields are read by the passes that rewrite or write
graphs, so no pass keeps a table of op names of its own.  The graph
optimiser (``flowbook.runtime.optimize``) reads ``fusion`` (how the op joins
a fused chain: the fused op a chain it heads becomes, the ufunc it is as a
tail step), ``passthrough`` (when its output is its input, so its readers
may read that instead) and ``shape_inputs`` (inputs whose shape alone decides
the result, for constant folding).  GraphDef export and import
(``flowbook.graph_io.graph_def``) read ``num_outputs`` (TF's output count),
``type_attrs`` (TF's polymorphic type attrs, each taking an input's dtype)
``attr_kinds`` (an attr's OpDef type, where its name misleads) and
``count_attr`` (the attr a NodeDef counts its variadic input's tensors in)
and ``tf_implicit`` (attrs TF's op lacks, at the value they have there).

Ops are declared in one form: one factory call per op that builds its OpDef
and registers it, the gradient function just above it.  :func:`op` is the
general one and returns the OpDef; the families have theirs, built on it
(``flowbook.ops.math.elementwise.unary`` and ``binary``, which return the
public wrapper their table module binds, the reductions, the activations...).
``OPS`` is a plain dict filled by them; registering a name twice is an error
unless ``replace=True``.  :func:`register_op`, :func:`register_gradient` and
:func:`no_gradient` stay for code outside ``flowbook.ops`` (TF1's
``tf.no_gradient``, tests).

    >>> from flowbook.framework.registry import OPS
    >>> OPS["MatMul"].inputs
    ('a', 'b')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

from flowbook.framework.dtypes import DType
from flowbook.framework.errors import NotFoundError
from flowbook.framework.tensor_shape import Shape


class Out(NamedTuple):
    """One output's static description, returned by an ``infer`` function.

    >>> from flowbook import dtypes
    >>> Out(dtypes.float32, (None, 10)).shape
    (None, 10)
    """

    dtype: DType
    shape: Shape


class _NotDifferentiable:
    def __repr__(self) -> str:
        return "NOT_DIFFERENTIABLE"


NOT_DIFFERENTIABLE = _NotDifferentiable()  # grad slot value for ops with no gradient


class Fusion(NamedTuple):
    """How the optimiser's fusion pass (``flowbook.runtime.optimize.fuse``) takes an op in.

    >>> Fusion(step="add", order="either").head is None
    True
    """

    head: str | None = None  # the fused op type a chain this op heads becomes; None: never heads
    follows: int = 0  # the output a chain it heads follows
    step: str | None = None  # as a tail step: the xp function its kernel calls; None: never a step
    # a binary step's operands: "either" order, "left" (the chain's value first) or "bias"
    # (first, a BiasAdd's channels last only); None: a unary step
    order: str | None = None


@dataclass
class OpDef:
    """Everything declared about one op type.  See the module docstring."""

    name: str  # the op type, TensorFlow's spelling: "MatMul"
    inputs: tuple[str, ...]  # input names; a leading "*" marks a variadic list ("*values")
    attrs: tuple[str, ...]  # attr names the builder sets and the kernel receives
    infer: Callable[..., Out | list[Out]]  # (*input tensors, **attrs) -> output descriptions
    kernel: Callable[..., Any] | None  # kernel(xp, *arrays, **attrs); None: never executed
    bind: Callable[..., Callable[..., Any]] | None = None  # (xp, **attrs) -> fn(*arrays)
    heavy: bool | Callable[[Any], bool] = False  # may go to the thread pool; fn(op) decides
    stateful: bool = False  # results change between runs, or it changes session state
    # session state bound in: "variable" | "rng" | "iterator" | "container" (flowbook.state.resources);
    # "rendezvous": a cluster task's Send/Recv table, bound by flowbook.distributed.server
    resource: str | None = None
    blocking: bool = False  # may wait (a queue op): may return a flowbook.state.pending.Pending
    ref_inputs: tuple[int, ...] = ()  # inputs that take a variable itself (its VarState), unread
    host_only: bool = False  # no GPU kernel: placed on the CPU (soft placement, or an error)
    # inputs read on the host as Python ints, kept in host memory on a GPU (negative: from the end)
    host_inputs: tuple[int, ...] = ()
    meta_inputs: tuple[int, ...] = ()  # inputs whose shape/dtype only is read: never copied
    takes_out: bool = False  # the bound kernel takes out=: writes its result into that array
    grad: Any = None  # gradient builder (see flowbook.autodiff.gradients) or NOT_DIFFERENTIABLE
    fusion: Fusion | None = None  # how the optimiser fuses it into a chain; None: never
    # when its output is its input (the optimiser drops it): "always", "same_shape" (a reshape to
    # the shape it has), "no_axes" (a reduction over an empty axes list); None: never
    passthrough: str | None = None
    shape_inputs: tuple[int, ...] = ()  # inputs whose shape alone the result depends on
    num_outputs: int = 1  # outputs in TensorFlow's OpDef (-1: it varies, as Split's)
    # TF's polymorphic type attrs: {attr: index of the input whose dtype it takes (-1: the last)};
    # None: {"T": 0}
    type_attrs: dict[str, int] | None = None
    attr_kinds: dict[str, str] = field(default_factory=dict)  # attr -> OpDef type, where needed
    count_attr: str | None = None  # the attr TF's NodeDef counts the variadic input's tensors in
    # attrs TF's OpDef lacks, at the value they always have there: not written, and read as it
    tf_implicit: dict[str, Any] = field(default_factory=dict)
    doc: str = field(default="", repr=False)

    def bound_kernel(self, xp: Any, attrs: dict[str, Any]) -> Callable[..., Any]:
        """The callable the executor runs with the input arrays only."""
        if self.bind is not None:
            return self.bind(xp, **attrs)
        if self.kernel is None:
            raise TypeError(f"Op type {self.name} has no kernel")
        return partial(self.kernel, xp, **attrs) if attrs else partial(self.kernel, xp)

    def is_heavy(self, op: Any) -> bool:
        return self.heavy(op) if callable(self.heavy) else bool(self.heavy)


OPS: dict[str, OpDef] = {}  # op type name -> its declaration


def register(opdef: OpDef, replace: bool = False) -> OpDef:
    """Add an OpDef to the registry; a second registration of a name is an error.

    >>> register(OPS["NoOp"])
    Traceback (most recent call last):
    ...
    KeyError: "Op type 'NoOp' is already registered (pass replace=True to override)"
    """
    if opdef.name in OPS and not replace:
        raise KeyError(
            f"Op type {opdef.name!r} is already registered (pass replace=True to override)"
        )
    OPS[opdef.name] = opdef
    return opdef


def op(
    name: str,
    inputs: tuple[str, ...],
    attrs: tuple[str, ...] = (),
    infer: Callable[..., Out | list[Out]] | None = None,
    kernel: Callable[..., Any] | None = None,
    *,
    replace: bool = False,
    **fields: Any,
) -> OpDef:
    """Declare an op: build its OpDef from the fields given, register it and return it.

    >>> twice = op("Twice", ("x",), infer=lambda x: Out(x.dtype, x.shape),
    ...            kernel=lambda xp, x: x * 2, grad=lambda op, g: 2 * g)
    >>> OPS["Twice"] is twice
    True
    >>> del OPS["Twice"]
    """
    if infer is None:
        raise TypeError(f"Op type {name} declares no infer")
    return register(OpDef(name, tuple(inputs), tuple(attrs), infer, kernel, **fields), replace)


def register_op(
    name: str,
    inputs: tuple[str, ...],
    infer: Callable[..., Out | list[Out]],
    attrs: tuple[str, ...] = (),
    **options: Any,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register the decorated function as the op's kernel (ops/ uses :func:`op`).

    >>> @register_op("Twice", ("x",), infer=lambda x: Out(x.dtype, x.shape))
    ... def twice(xp, x):
    ...     return x * 2
    >>> del OPS["Twice"]
    """

    def wrap(kernel: Callable[..., Any]) -> Callable[..., Any]:
        register(OpDef(name, inputs, attrs, infer, kernel, **options))
        return kernel

    return wrap


def register_gradient(op_type: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: ``grad(op, *output_grads) -> input grads`` for an op type registered above it.

    The function builds graph (it runs on the executor like any op); it gets
    one gradient tensor per output (zeros stand in for outputs with none) and
    returns one gradient (or None) per input.

    >>> @register_gradient("NoOp")
    ... def _noop_grad(op):
    ...     return []
    >>> OPS["NoOp"].grad = NOT_DIFFERENTIABLE
    """

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        get(op_type).grad = fn
        return fn

    return wrap


def no_gradient(*op_types: str) -> None:
    """Declare that these op types have no gradient (the gradient stops there, as None)."""
    for op_type in op_types:
        get(op_type).grad = NOT_DIFFERENTIABLE


def get(op_type: str) -> OpDef:
    """The OpDef for a type name, or a clear error naming the unknown type."""
    try:
        return OPS[op_type]
    except KeyError:
        raise NotFoundError(None, None, f"Op type not registered '{op_type}'") from None

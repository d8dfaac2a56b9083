"""Debugging a graph: step through a run, stop at the first NaN, print from inside.

- :class:`Stepper` runs one ``Session.run`` signature an op at a time on the
  calling thread (``step``, ``run_to``, ``cont`` with breakpoints, ``value``
  of any computed tensor), driving the executor's scheduler; a run with
  branches and loops steps iteration by iteration (``LoopStepper`` is another
  name for it).  See ``flowbook.debug.stepper``.
- :class:`NanGuard` is an executor Observer that stops a run at the first op
  producing NaN or Inf, naming the op, its cell and line, and its values;
  ``RunOptions(check_numerics=True)`` and ``ConfigProto(check_numerics=True)``
  attach one.  See ``flowbook.debug.nan_guard``.
- ``check_numerics``, ``add_check_numerics_ops``, ``Print`` and ``print`` are
  the graph ops of ``flowbook.ops.debugging.debug_ops``, re-exported here.

    >>> import flowbook as fb
    >>> from flowbook import debug
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     st = debug.Stepper(s, fb.multiply(fb.constant(2.0), 3.0, name="m"))
    ...     st.step().name, st.step().name, st.done, float(st.cont())
    ('Const', 'Const_1', False, 6.0)
"""

from flowbook.debug.nan_guard import NanGuard, describe_value
from flowbook.debug.stepper import LoopStepper, Stepper, StepperError
from flowbook.ops.debugging.debug_ops import (
    Print,
    add_check_numerics_ops,
    check_numerics,
    print,
    print_v2,
)

__all__ = [
    "LoopStepper",
    "NanGuard",
    "Print",
    "Stepper",
    "StepperError",
    "add_check_numerics_ops",
    "check_numerics",
    "describe_value",
    "print",
    "print_v2",
]

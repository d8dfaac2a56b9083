"""``fb.app.run``: TF1's ``tf.app.run``, made safe to call from a notebook.

In a script, ``fb.app.run()`` calls ``main(sys.argv)`` (``main`` defaults to
the ``main`` function of the ``__main__`` module) and exits with its return
value, as TensorFlow does.  Inside IPython or a Jupyter kernel ``sys.exit``
would only print a SystemExit traceback, so there ``run`` returns main's
value instead.  Before ``main`` runs, argv is parsed into the flags defined
with ``tf.app.flags``/``tf.flags`` (absl's, see :mod:`flowbook.platform.flags`), as TF1
did: known flags are consumed and ``main`` gets ``argv[0]`` and the rest;
arguments that are no flag of ours are left for ``main`` to see.  A bad flag
value (``--steps=abc``) prints absl's message and exits with status 1 in a
script, and raises ``flags.Error`` in IPython.

    >>> try:
    ...     run(lambda argv: len(argv), argv=["prog", "-x"])
    ... except SystemExit as e:
    ...     print("exit status", e.code)
    exit status 2
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from flowbook.platform import flags

__all__ = ["flags", "run"]


def _in_ipython() -> bool:
    """Whether an IPython shell (a Jupyter kernel, the IPython REPL) is running this code."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        return ipython.get_ipython() is not None
    except Exception:
        return False


def run(main: Callable[[list[str]], Any] | None = None, argv: Sequence[str] | None = None) -> Any:
    """Parse the flags in ``argv`` (default ``sys.argv``), call ``main(remaining argv)``
    (default: ``__main__.main``), then ``sys.exit`` with its return value, except in
    IPython/Jupyter, where the value is returned.
    """
    args = list(sys.argv if argv is None else argv)
    try:
        args = flags.parse(args)
    except flags.Error as e:
        if _in_ipython():
            raise
        print(f"FATAL Flags parsing error: {e}", file=sys.stderr)
        sys.exit(1)
    if main is None:
        main = getattr(sys.modules["__main__"], "main", None)
        if main is None:
            raise AttributeError(
                "app.run() found no function main() in the __main__ module: define main(argv) "
                "or pass it, app.run(main)."
            )
    result = main(args)
    if _in_ipython():
        return result
    sys.exit(result)

"""Unchanged TF1 scripts: ``import tensorflow as tf`` answered by flowbook, on request.

``python -m flowbook.tf1 script.py [args]`` (or the ``flowbook-tf1`` command)
runs a script as ``python script.py [args]`` would, with the alias below in
place; in a notebook, ``%load_ext flowbook`` then ``%flowbook_as_tensorflow``
does the same for the cells that follow.  The alias is opt-in only: plain
``import flowbook`` never installs it.

**The alias** (:func:`install`) puts entries in ``sys.modules``:

- ``tensorflow`` and ``tensorflow.compat.v1`` -> the ``flowbook`` module, and
  ``tensorflow.compat`` -> ``flowbook.api.compat``;
- ``tensorflow.<name>`` -> ``flowbook.<name>`` for every public namespace
  (``tensorflow.nn`` is ``tf.nn``; the namespaces ``import flowbook`` leaves for
  first use, such as ``train`` and ``contrib``, are loaded first), then
  ``tensorflow.<sub>`` -> ``flowbook.<sub>`` for every other submodule already
  loaded (``import tensorflow.train`` reuses ``flowbook.train``, never a second
  copy of it);
- ``tensorflow.contrib.<name>`` -> each namespace ``tf.contrib`` has
  (``import tensorflow.contrib.layers``);
- a few modules outside those namespaces that TF1 scripts import, each with
  empty stand-in packages on the way: ``tensorflow.examples.tutorials.mnist
  .input_data`` -> :mod:`flowbook.data.input_data` (the digits scaled to 28x28
  standing in for MNIST, never downloaded), ``tensorflow.python.client
  .device_lib`` -> :mod:`flowbook.api.device_lib` and ``tensorflow.contrib
  .tensorboard.plugins.projector`` -> :mod:`flowbook.api.projector`.

and puts a finder first on ``sys.meta_path`` that answers every *other*
``tensorflow.*`` import (``tensorflow.python.ops``, ``tensorflow.contrib``...)
with a ``ModuleNotFoundError`` saying flowbook has only TF1's public API.
:func:`uninstall` removes exactly what ``install`` added.

**Other libraries see flowbook as TensorFlow** while the alias is active.
TensorBoard's event writer, which ``tf.summary.FileWriter`` uses, imports
``tensorflow`` and calls ``tf.io.gfile.makedirs`` and ``tf.io.gfile.GFile``;
flowbook's :mod:`flowbook.platform.gfile` serves them.  TensorBoard remembers the
module it found for the rest of the process, even after ``uninstall``.  A
process that has imported the real TensorFlow cannot have the alias.

    >>> import sys
    >>> with as_tensorflow():
    ...     import tensorflow as tf
    ...     tf.__name__, tf.compat.v1 is tf
    ('flowbook', True)
    >>> "tensorflow" in sys.modules
    False
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import os
import runpy
import sys
import types
from collections.abc import Iterator, Sequence
from typing import Any

import flowbook

_STAND_INS = {  # modules outside TF1's namespaces that scripts import: name -> flowbook's module
    "tensorflow.examples.tutorials.mnist.input_data": "flowbook.data.input_data",
    "tensorflow.python.client.device_lib": "flowbook.api.device_lib",
    "tensorflow.contrib.tensorboard.plugins.projector": "flowbook.api.projector",
}
_ADDED: dict[str, Any] = {}  # sys.modules entries install() made -> the module each holds


class _Refuser(importlib.abc.MetaPathFinder):
    """Refuses the ``tensorflow.*`` modules the alias does not provide, saying why."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == "tensorflow" or fullname.startswith("tensorflow."):
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: flowbook stands in for TensorFlow 1's public "
                "API (import tensorflow as tf; tf.compat.v1; tensorflow.examples.tutorials"
                ".mnist.input_data), not for TensorFlow's internal modules",
                name=fullname,
            )
        return None


_REFUSER = _Refuser()


def _aliases() -> dict[str, Any]:
    """The ``sys.modules`` entries the alias consists of: name -> module."""
    table: dict[str, Any] = {
        "tensorflow": flowbook,
        "tensorflow.compat": flowbook.api.compat,
        "tensorflow.compat.v1": flowbook,
    }
    for name, (_, attribute) in flowbook._LAZY.items():  # namespaces left for first use
        if attribute is None:
            getattr(flowbook, name)
    for name, value in vars(flowbook).items():  # the public namespaces: tensorflow.nn is tf.nn
        if isinstance(value, types.ModuleType) and not name.startswith("_"):
            table.setdefault("tensorflow." + name, value)
    for name, module in list(sys.modules.items()):
        if name.startswith("flowbook.") and module is not None:
            table.setdefault("tensorflow." + name.removeprefix("flowbook."), module)
    contrib = table["tensorflow.contrib"]
    for name, value in vars(contrib).items():  # import tensorflow.contrib.layers
        if isinstance(value, types.ModuleType) and not name.startswith("_"):
            table.setdefault(f"tensorflow.contrib.{name}", value)
    for name, target in _STAND_INS.items():
        _stand_in(table, name, importlib.import_module(target))
    return table


def _stand_in(table: dict[str, Any], name: str, module: types.ModuleType) -> None:
    """``table[name] = module``, with an empty package for each missing parent on the way.

    A parent made here holds its child as an attribute, as imports expect; a
    parent that is a flowbook module (``tensorflow.contrib``) is left as it is.
    """
    table[name] = module
    parent, _, child = name.rpartition(".")
    while parent not in table:
        package = types.ModuleType(parent, f"flowbook's stand-in for {parent}")
        package.__path__ = []  # a package: its submodules come from sys.modules only
        table[parent] = package
        setattr(package, child, table[f"{parent}.{child}"])
        parent, _, child = parent.rpartition(".")
    if table[parent].__name__.startswith("tensorflow."):
        setattr(table[parent], child, table[f"{parent}.{child}"])


def is_installed() -> bool:
    """Whether ``import tensorflow`` gives flowbook now."""
    return sys.modules.get("tensorflow") is flowbook


def install() -> None:
    """Make ``import tensorflow`` (and ``tensorflow.compat.v1``, the MNIST helper) give flowbook.

    Installing twice is harmless.  Raises ``RuntimeError`` if the real TensorFlow is imported.
    """
    present = sys.modules.get("tensorflow")
    if present is not None and present is not flowbook:
        raise RuntimeError(
            "the real tensorflow is imported in this process already; flowbook cannot stand in "
            "for it (start a new process or kernel and alias before importing tensorflow)"
        )
    for name, module in _aliases().items():
        if name not in sys.modules:
            sys.modules[name] = module
            _ADDED[name] = module
    if _REFUSER not in sys.meta_path:
        sys.meta_path.insert(0, _REFUSER)


def uninstall() -> None:
    """Remove what :func:`install` added (``import tensorflow`` fails again, or finds the real one)."""
    for name, module in list(_ADDED.items()):
        if sys.modules.get(name) is module:
            del sys.modules[name]
        del _ADDED[name]
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(_REFUSER)


@contextlib.contextmanager
def as_tensorflow() -> Iterator[types.ModuleType]:
    """The alias for the ``with`` block only (removed after, unless it was installed before)."""
    was = is_installed()
    install()
    try:
        yield flowbook
    finally:
        if not was:
            uninstall()


USAGE = "usage: python -m flowbook.tf1 script.py [args...]  (or: flowbook-tf1 script.py ...)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run a TF1 script with flowbook as ``tensorflow``: ``main(["train.py", "--steps=5"])``.

    The script runs as ``__main__`` with ``sys.argv = [script, *args]`` and its folder first on
    ``sys.path``, as ``python script.py`` would; ``SystemExit`` from it passes through.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not args else sys.stdout)
        return 2 if not args else 0
    script = args[0]
    if not os.path.isfile(script):
        print(f"flowbook.tf1: cannot open file {script!r}\n{USAGE}", file=sys.stderr)
        return 2
    install()
    sys.argv = args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())

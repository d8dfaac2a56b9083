"""Op and scope names: TensorFlow's rules, and picking a unique name in a graph.

An op's full name must match ``[A-Za-z0-9.][A-Za-z0-9_.\\-/>]*`` and a name
scope ``[A-Za-z0-9_.\\-/>]*``, as in TensorFlow: a name with ``:`` could not
be fetched as ``"name:0"``, one starting with ``^`` reads as a control input
in a GraphDef, and newlines break every listing.  :func:`check_op_name` and
:func:`check_scope_name` refuse the others with a message a student can act
on.

:func:`pick_name` gives TensorFlow's uniquifying: ``foo``, ``foo_1``,
``foo_2``...; names are compared case-insensitively, as TF does (so
checkpoints and GraphDefs stay valid on case-insensitive file systems).

    >>> in_use = {}
    >>> full, claims = pick_name(in_use, {}, "foo", "layer1"); in_use.update(claims); full
    'layer1/foo'
    >>> pick_name(in_use, {}, "foo", "layer1")[0]
    'layer1/foo_1'
"""

from __future__ import annotations

import re
from typing import Any

_VALID_OP_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*\Z")
_VALID_SCOPE_NAME = re.compile(r"[A-Za-z0-9_.\-/>]*\Z")
_RULE = "use only letters, digits and _ . - / > (no spaces, ':' or newlines), as in TensorFlow"


def check_op_name(full_name: str, op_type: str, site: Any) -> str:
    """``full_name``, or ``ValueError`` naming the op type and its site when TF would refuse it.

    >>> check_op_name("a:0", "Const", None)
    Traceback (most recent call last):
    ...
    ValueError: Const: 'a:0' is not a valid op name: names start with a letter, a digit or '.', and use only letters, digits and _ . - / > (no spaces, ':' or newlines), as in TensorFlow
    """
    if not _VALID_OP_NAME.match(full_name):
        where = f" ({site.describe()})" if site is not None else ""
        raise ValueError(
            f"{op_type}{where}: {full_name!r} is not a valid op name: names start with a "
            f"letter, a digit or '.', and {_RULE}"
        )
    return full_name


def check_scope_name(name: str, at_top: bool = False) -> str:
    """``name``, or ``ValueError`` when TF would refuse it as a name scope.

    A scope opened at the top must also be a valid op name (its ops' full
    names start with it), so that every default op name in it is valid too.

    >>> check_scope_name("layer 1")
    Traceback (most recent call last):
    ...
    ValueError: 'layer 1' is not a valid name scope: names use only letters, digits and _ . - / > (no spaces, ':' or newlines), as in TensorFlow
    """
    if not _VALID_SCOPE_NAME.match(name):
        raise ValueError(f"{name!r} is not a valid name scope: names {_RULE}")
    if at_top and not _VALID_OP_NAME.match(name):
        raise ValueError(
            f"{name!r} is not a valid name scope at the top: names there start with a letter, "
            f"a digit or '.'"
        )
    return name


def pick_name(
    in_use: dict[str, int], ops: Any, name: str, stack: str
) -> tuple[str, dict[str, int]]:
    """The full name for ``name`` under scope ``stack``, and the ``in_use`` entries taking it sets.

    ``in_use`` maps lower-cased names to the next suffix; ``ops`` holds the
    names taken by ops.  A name ending in ``/`` is exact (TF's scope-as-name):
    it is refused if an op has it already.
    """
    if name.endswith("/"):  # a scope name used as an op name: exact, TF-style
        exact = name[:-1]
        if exact in ops:
            raise ValueError(f"Duplicate node name in graph: '{exact}'")
        return exact, {exact.lower(): max(1, in_use.get(exact.lower(), 0))}
    full = f"{stack}/{name}" if stack else name
    key = full.lower()
    count = in_use.get(key, 0)
    if not count:
        return full, {key: 1}
    candidate = f"{full}_{count}"
    while candidate.lower() in in_use:
        count += 1
        candidate = f"{full}_{count}"
    return candidate, {key: count + 1, candidate.lower(): 1}

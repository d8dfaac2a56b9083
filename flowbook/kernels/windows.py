"""Sliding windows over NHWC images: the machinery that convolution and pooling share.

:func:`out_size` is TensorFlow's padding arithmetic (``SAME``: ``out =
ceil(in / stride)``, the ``max((out - 1) * stride + k - in, 0)`` padded cells
split with the smaller half before; ``VALID``: ``(in - k) // stride + 1``),
:func:`windows` is im2col without a loop (an ``as_strided`` view
``[N, OH, OW, KH, KW, C]`` of the padded input, which numpy and CuPy both
have; dilated taps are just larger strides), :func:`row_windows` the copy of
one kernel row of it, and :func:`scatter_windows` its transpose, col2im, as
KH*KW slice-adds (a loop over the window, never over pixels or images; one
write per slice when windows cannot overlap).  A dilated window's geometry
is that of its :func:`span`.  Then the checks every
window op makes: its attrs when the graph is built, and a backprop's incoming
gradient against the shape the forward op produced, statically
(:func:`check_static`, a ValueError at the line that built it) and at run
time (:func:`check_runtime`, TF's InvalidArgumentError).

    >>> out_size(5, 2, 2, "SAME"), out_size(5, 2, 2, "VALID")
    ((3, 0, 1), (2, 0, 0))
"""

from __future__ import annotations

from typing import Any, NamedTuple

from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.tensor_shape import Shape, fmt

PADDINGS = ("SAME", "VALID")


# ------------------------------------------------------------ window geometry
class Geometry(NamedTuple):
    """Where the windows of one spatial layout fall: output size and padding."""

    oh: int  # output rows
    ow: int  # output columns
    top: int  # padded rows before the first input row
    bottom: int
    left: int
    right: int


def out_size(size: int, k: int, stride: int, padding: str) -> tuple[int, int, int]:
    """(output size, pad before, pad after) of one dimension, TensorFlow's arithmetic.

    >>> out_size(5, 3, 2, "SAME"), out_size(4, 3, 2, "SAME"), out_size(5, 3, 2, "VALID")
    ((3, 1, 1), (2, 0, 1), (2, 0, 0))
    """
    if padding == "VALID":
        return (size - k) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return out, total // 2, total - total // 2


def window_geometry(
    hw: tuple[int, int], k: tuple[int, int], s: tuple[int, int], padding: str
) -> Geometry:
    """The Geometry of ``hw`` windowed by ``k`` with strides ``s``; InvalidArgumentError if empty."""
    if padding == "VALID" and (hw[0] < k[0] or hw[1] < k[1]):
        raise InvalidArgumentError(
            None, None, f"window {list(k)} is larger than the VALID-padded input {list(hw)}"
        )
    oh, top, bottom = out_size(hw[0], k[0], s[0], padding)
    ow, left, right = out_size(hw[1], k[1], s[1], padding)
    return Geometry(oh, ow, top, bottom, left, right)


def pad_nhwc(xp: Any, x: Any, g: Geometry, value: Any = 0) -> Any:
    """``x`` with ``g``'s padding around its rows and columns (``x`` itself when none)."""
    if not (g.top or g.bottom or g.left or g.right):
        return x
    pads = ((0, 0), (g.top, g.bottom), (g.left, g.right), (0, 0))
    return xp.pad(x, pads, mode="constant", constant_values=value)


def span(k: tuple[int, int], d: tuple[int, int] = (1, 1)) -> tuple[int, int]:
    """The cells a window of ``k`` taps dilated by ``d`` covers: ``(k - 1) * d + 1``.

    >>> span((3, 3), (2, 1))
    (5, 3)
    """
    return (k[0] - 1) * d[0] + 1, (k[1] - 1) * d[1] + 1


def windows(
    xp: Any,
    padded: Any,
    g: Geometry,
    k: tuple[int, int],
    s: tuple[int, int],
    d: tuple[int, int] = (1, 1),
) -> Any:
    """A strided view ``[N, OH, OW, KH, KW, C]`` of every window (no copy: im2col on demand).

    ``d`` dilates the taps: tap (i, j) reads ``padded[:, r*s0 + i*d0, c*s1 + j*d1]``.
    """
    n, _, _, c = padded.shape
    s0, s1, s2, s3 = padded.strides
    return xp.lib.stride_tricks.as_strided(
        padded,
        shape=(n, g.oh, g.ow, k[0], k[1], c),
        strides=(s0, s1 * s[0], s2 * s[1], s1 * d[0], s2 * d[1], s3),
    )


def row_windows(
    xp: Any,
    padded: Any,
    g: Geometry,
    k: tuple[int, int],
    s: tuple[int, int],
    i: int,
    d: tuple[int, int] = (1, 1),
) -> Any:
    """Row ``i`` of every window, copied: ``[N*OH*OW, KW*C]`` (im2col of one kernel row)."""
    n, _, _, c = padded.shape
    s0, s1, s2, s3 = padded.strides
    view = xp.lib.stride_tricks.as_strided(
        padded[:, i * d[0] :],
        shape=(n, g.oh, g.ow, k[1], c),
        strides=(s0, s1 * s[0], s2 * s[1], s2 * d[1], s3),
    )
    return view.reshape(n * g.oh * g.ow, k[1] * c)


def tap(i: int, j: int, g: Geometry, s: tuple[int, int], d: tuple[int, int] = (1, 1)) -> tuple:
    """Index of the ``[N, OH, OW, C]`` slice of a padded array that tap (i, j) reads."""
    r, c = i * d[0], j * d[1]
    rows = slice(r, r + s[0] * (g.oh - 1) + 1, s[0])
    return slice(None), rows, slice(c, c + s[1] * (g.ow - 1) + 1, s[1])


def scatter_windows(
    xp: Any,
    shape: tuple[int, ...],
    g: Geometry,
    k: tuple[int, int],
    s: tuple[int, int],
    part: Any,
    d: tuple[int, int] = (1, 1),
) -> Any:
    """Sum window contributions back onto an NHWC array of ``shape`` (col2im, KH*KW slice-adds).

    ``part(i, j)`` gives the ``[N, OH, OW, C]`` values that window tap (i, j) sends back.
    Windows that cannot overlap (``stride >= span``) write each slice once, as ``value
    + 0`` (the bits the adds into zeros give), into zeros only where they leave gaps.
    """
    n, h, w, c = shape
    full = (n, h + g.top + g.bottom, w + g.left + g.right, c)
    ks = span(k, d)
    disjoint = s[0] >= ks[0] and s[1] >= ks[1]
    tiled = disjoint and tuple(s) == tuple(k) and full[1:3] == (g.oh * k[0], g.ow * k[1])
    out = None
    for i in range(k[0]):
        for j in range(k[1]):
            v = part(i, j)
            if out is None:
                out = (xp.empty if tiled else xp.zeros)(full, dtype=v.dtype)
            if disjoint:
                xp.add(v, v.dtype.type(0), out=out[tap(i, j, g, s, d)])
            else:
                out[tap(i, j, g, s, d)] += v
    if not (g.top or g.bottom or g.left or g.right):
        return out
    return xp.ascontiguousarray(out[:, g.top : g.top + h, g.left : g.left + w, :])


# ------------------------------------------------------------ static checks
def check_padding(op_type: str, padding: Any) -> str:
    """The padding attr, or TensorFlow's ValueError naming the allowed values."""
    if padding not in PADDINGS:
        raise ValueError(
            f"Attr 'padding' of '{op_type}' Op passed string '{padding}' not in: \"SAME\", \"VALID\"."
        )
    return padding


def check_window_attr(what: str, values: Any, data_format: str = "NHWC") -> tuple[int, ...]:
    """A ``strides``/``ksize`` attr: 4 positive ints with 1 for batch and depth."""
    if data_format != "NHWC":
        raise ValueError(
            f"data_format must be 'NHWC' (flowbook has no NCHW kernels), got {data_format!r}"
        )
    v = tuple(int(d) for d in values)
    if len(v) != 4:
        raise ValueError(f"{what} must have 4 elements ([1, rows, cols, 1]), got {list(v)}")
    if v[0] != 1 or v[3] != 1:
        raise ValueError(
            f"{what} {list(v)}: windows and strides over the batch and depth dimensions are "
            "not supported (use [1, rows, cols, 1])"
        )
    if v[1] < 1 or v[2] < 1:
        raise ValueError(f"{what} must be positive, got {list(v)}")
    return v


def rank4(what: str, shape: Shape) -> tuple[int | None, ...]:
    """``shape`` as 4 dims (all unknown for an unknown rank); ValueError for another rank."""
    if shape is None:
        return (None,) * 4
    if len(shape) != 4:
        raise ValueError(f"Shape must be rank 4 but is rank {len(shape)} for {what}{fmt(shape)}")
    return shape


def static_out(
    size: int | None, k: int | None, stride: int, padding: str, shapes: str
) -> int | None:
    """One output dim when known; TensorFlow's ValueError for an empty VALID window."""
    if size is None or (k is None and padding == "VALID"):
        return None
    if padding == "SAME":
        return -(-size // stride)
    if size < k:  # type: ignore[operator]
        raise ValueError(
            f"Negative dimension size caused by subtracting {k} from {size} ({shapes})"
        )
    return (size - k) // stride + 1  # type: ignore[operator]


def window_list(values: Any, what: str) -> list[int]:
    """TF's ``_get_sequence``: an int or 1-, 2- or 4-list as the 4-list ``[1, rows, cols, 1]``."""
    v = [int(values)] if isinstance(values, int) else [int(d) for d in values]
    if len(v) == 1:
        return [1, v[0], v[0], 1]
    if len(v) == 2:
        return [1, v[0], v[1], 1]
    if len(v) == 4:
        return v
    raise ValueError(f"{what} should be of length 1, 2 or 4 but was {len(v)}: {v}")


def padding_str(padding: Any) -> Any:
    return padding.decode() if isinstance(padding, bytes) else padding


def check_static(op_type: str, what: str, got: Shape, want: Shape, against: str) -> None:
    """ValueError when a rank-4 input and the shape it must have disagree in a known dim."""
    gots = rank4(what, got)
    for d, (a, b) in enumerate(zip(gots, want)):  # type: ignore[arg-type]
        if a is not None and b is not None and a != b:
            raise ValueError(
                f"{op_type}: {what}{fmt(gots)} does not match {against} {fmt(want)} "
                f"in dimension {d}"
            )


def check_runtime(what: str, value: Any, want: tuple[int, ...], against: str) -> None:
    """InvalidArgumentError when an array fed to a backprop has not the forward shape."""
    if tuple(value.shape) != want:
        raise InvalidArgumentError(
            None, None, f"{what}{fmt(tuple(value.shape))} does not match {against} {fmt(want)}"
        )


def attrs_of(op: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """The attrs ``names`` that ``op`` has: what a gradient op copies from its forward op."""
    return {a: op.attrs[a] for a in names if a in op.attrs}

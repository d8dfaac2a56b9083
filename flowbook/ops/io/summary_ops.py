"""Summary ops: ScalarSummary, HistogramSummary and MergeSummary (TF1's summary kernels).

Each kernel returns a serialized ``Summary`` protobuf (TensorBoard's own
``tensorboard.compat.proto.summary_pb2``, imported on first use) as a 0-d
numpy object array holding ``bytes`` (dtype ``string``); ``sess.run`` hands
it back as ``bytes``, ready for ``FileWriter.add_summary``.

- **ScalarSummary**(tags, values): one ``simple_value`` per element; ``tags``
  and ``values`` must have the same shape.
- **HistogramSummary**(tag, values): a ``HistogramProto`` with min, max,
  num, sum, sum_squares and TF's default bucket limits: ``±1e-12 * 1.1**k``
  up to 1e20, then ±DBL_MAX, and 0 in the middle; runs of empty buckets are
  collapsed into one as TF's ``Histogram::EncodeToProto`` does.  NaN or Inf
  fails the run, as in TF.
- **MergeSummary**(*inputs): the concatenation of its inputs' values; a tag
  seen twice fails the run (TF's "Duplicate tag").

All are ``NOT_DIFFERENTIABLE``.  They are stateless: a summary of constants
may be folded by ``constant_value``, which is harmless (the fold runs the
same kernel on numpy).  The kernels copy CuPy inputs to the host first.

    >>> import flowbook as fb
    >>> from tensorboard.compat.proto.summary_pb2 import Summary
    >>> with fb.Graph().as_default(), fb.Session() as s:
    ...     out = s.run(scalar_summary("loss", fb.constant(0.5)))
    >>> [(v.tag, v.simple_value) for v in Summary.FromString(out).value]
    [('loss', 0.5)]
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

import numpy as np

from flowbook.framework import dtypes
from flowbook.framework.errors import InvalidArgumentError
from flowbook.framework.registry import NOT_DIFFERENTIABLE, Out, op
from flowbook.framework.tensor import Tensor
from flowbook.ops._builder import make1, tensor

__all__ = ["default_bucket_limits", "histogram_proto", "histogram_summary", "merge_summary"]
__all__ += ["scalar_summary"]


def _summary_pb2() -> Any:
    from tensorboard.compat.proto import summary_pb2  # lazy: keeps `import flowbook` fast

    return summary_pb2


def _host(value: Any) -> np.ndarray:
    """A value as a numpy array (a CuPy array is copied to the host)."""
    if type(value).__module__.split(".")[0] == "cupy":
        value = value.get()
    return np.asarray(value)


def _as_bytes(summary: Any) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = summary.SerializeToString()
    return out


def _tag(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


# ------------------------------------------------------------------ buckets
@cache
def default_bucket_limits() -> np.ndarray:
    """TF's default histogram bucket upper limits (``histogram.cc``), ascending.

    >>> lim = default_bucket_limits()
    >>> len(lim), float(lim[len(lim) // 2]), float(lim[len(lim) // 2 + 1])
    (1551, 0.0, 1e-12)
    """
    pos: list[float] = []
    v = 1.0e-12
    while v < 1.0e20:
        pos.append(v)
        v *= 1.1
    pos.append(sys.float_info.max)
    return np.array([-x for x in reversed(pos)] + [0.0] + pos, dtype=np.float64)


def histogram_proto(values: Any) -> Any:
    """A ``HistogramProto`` of ``values`` with TF's default buckets (empty runs collapsed).

    >>> h = histogram_proto([1.0, 1.0, 2.0])
    >>> h.num, h.sum, h.min, h.max, sum(h.bucket)
    (3.0, 4.0, 1.0, 2.0, 3.0)
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    limits = default_bucket_limits()
    counts = np.bincount(np.searchsorted(limits, x, side="right"), minlength=len(limits))
    counts = counts[: len(limits)].astype(np.float64)  # values past DBL_MAX cannot occur
    proto = _summary_pb2().HistogramProto()
    if x.size:
        proto.min, proto.max = float(x.min()), float(x.max())
    proto.num, proto.sum, proto.sum_squares = float(x.size), float(x.sum()), float(x @ x)
    nonzero = np.flatnonzero(counts)
    i = 0
    for j in nonzero:  # a run of empty buckets before a full one becomes one empty bucket
        if j > i:
            proto.bucket_limit.append(float(limits[j - 1]))
            proto.bucket.append(0.0)
        proto.bucket_limit.append(float(limits[j]))
        proto.bucket.append(float(counts[j]))
        i = j + 1
    if i < len(limits):
        proto.bucket_limit.append(float(limits[-1]))
        proto.bucket.append(0.0)
    return proto


# ---------------------------------------------------------------------- ops
def _string_scalar(*_: Any, **__: Any) -> Out:
    return Out(dtypes.string, ())


def _scalar_infer(tags: Tensor, values: Tensor) -> Out:
    ts, vs = tags._shape, values._shape
    if ts is not None and vs is not None and None not in ts + vs and ts != vs:
        raise ValueError(
            f"ScalarSummary: tags and values must have the same shape, got "
            f"tags{list(ts)} and values{list(vs)}"
        )
    return Out(dtypes.string, ())


def _scalar_kernel(xp: Any, tags: Any, values: Any) -> np.ndarray:
    tags, values = _host(tags), _host(values)
    if tags.shape != values.shape:
        raise InvalidArgumentError(
            None,
            None,
            f"tags and values must have the same shape: {list(tags.shape)} != {list(values.shape)}",
        )
    pb = _summary_pb2()
    s = pb.Summary()
    for t, v in zip(tags.ravel().tolist(), values.ravel().tolist()):
        s.value.add(tag=_tag(t), simple_value=float(v))
    return _as_bytes(s)


op(
    "ScalarSummary",
    ("tags", "values"),
    infer=_scalar_infer,
    kernel=_scalar_kernel,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={"T": 1},
)


def _histogram_kernel(xp: Any, tag: Any, values: Any) -> np.ndarray:
    name = _tag(_host(tag)[()])
    x = _host(values).astype(np.float64)
    if not np.isfinite(x).all():
        what = "Nan" if np.isnan(x).any() else "Infinity"
        raise InvalidArgumentError(None, None, f"{what} in summary histogram for: {name}")
    s = _summary_pb2().Summary()
    s.value.add(tag=name).histo.CopyFrom(histogram_proto(x))
    return _as_bytes(s)


op(
    "HistogramSummary",
    ("tag", "values"),
    infer=_string_scalar,
    kernel=_histogram_kernel,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={"T": 1},
)


def _merge_kernel(xp: Any, *inputs: Any) -> np.ndarray:
    pb = _summary_pb2()
    out, seen = pb.Summary(), set()
    for blob in inputs:
        for item in _host(blob).ravel().tolist():
            part = pb.Summary.FromString(item if isinstance(item, bytes) else bytes(item))
            for v in part.value:
                if v.tag in seen:
                    raise InvalidArgumentError(
                        None, None, f"Duplicate tag {v.tag} found in summary inputs"
                    )
                seen.add(v.tag)
                out.value.add().CopyFrom(v)
    return _as_bytes(out)


op(
    "MergeSummary",
    ("*inputs",),
    infer=_string_scalar,
    kernel=_merge_kernel,
    grad=NOT_DIFFERENTIABLE,
    type_attrs={},
    count_attr="N",
)


# ----------------------------------------------------------------- wrappers
def scalar_summary(tags: Any, values: Any, name: str | None = None) -> Tensor:
    """TF1's ``tf.scalar_summary``: a Summary of ``simple_value`` per tag (no scoping)."""
    return make1(
        "ScalarSummary",
        [tensor(tags, dtype=dtypes.string), tensor(values)],
        name=name or "ScalarSummary",
    )


def histogram_summary(tag: Any, values: Any, name: str | None = None) -> Tensor:
    """TF1's ``tf.histogram_summary``: a Summary with the histogram of ``values``."""
    return make1(
        "HistogramSummary",
        [tensor(tag, dtype=dtypes.string), tensor(values)],
        name=name or "HistogramSummary",
    )


def merge_summary(inputs: Any, name: str | None = None) -> Tensor:
    """TF1's ``tf.merge_summary``: one Summary holding every input's values."""
    return make1("MergeSummary", [tensor(x) for x in inputs], name=name or "MergeSummary")

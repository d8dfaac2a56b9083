"""Live summaries in the notebook: SVG loss curves, histogram ridgelines, a progress bar.

Nothing here needs a JS build.  A :class:`LivePlot` keeps, per tag, the
scalar points ``(step, value)`` and the last :data:`RIDGES` histograms it was
given (``add_summary`` feeds it ``Summary`` protos); it renders one HTML
string of small inline SVG charts and shows it through one IPython display
handle (``display(..., display_id=True)`` then ``handle.update(...)``).

Updates are throttled: at most one render per ``min_interval`` seconds
(0.25 s: about 4 a second) measured on ``clock``; an add inside the interval
only marks the plot ``dirty``, and ``flush``/``close`` always render the last
state.  Outside IPython (no running shell) the default ``display`` is None and
everything degrades to nothing; :class:`progress` prints a text bar to stderr
instead.  ``display`` and ``clock`` are parameters so tests (and other front
ends) can substitute their own.

    >>> p = LivePlot(display=None)
    >>> p.add_scalar("loss", 1.0, step=0); p.add_scalar("loss", 0.5, step=1)
    >>> "<svg" in p.to_html(), p.renders  # the second add came too soon to redraw
    (True, 1)
"""

from __future__ import annotations

import html
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

__all__ = ["LivePlot", "ipython_display", "progress"]

RIDGES = 12  # histograms kept (and drawn) per tag
BINS = 48  # x resolution of a ridgeline


def ipython_display() -> Callable[[Any], Any] | None:
    """``display(obj) -> handle`` with a display_id in a running IPython shell, else None."""
    try:
        from IPython import get_ipython  # lazy: IPython is slow to import, and absent in scripts
    except ImportError:
        return None
    if get_ipython() is None:
        return None
    from IPython.display import HTML, display  # lazy, as above

    return lambda text: display(HTML(text), display_id=True)


class _Html(str):
    """A str that IPython shows as HTML (what fake displays receive as-is)."""

    def _repr_html_(self) -> str:
        return str(self)


def _update(handle: Any, text: str) -> None:
    from IPython.display import HTML  # lazy: only a notebook display gets here

    handle.update(HTML(text))


class LivePlot:
    """Throttled inline charts of scalars (line charts) and histograms (ridgelines)."""

    def __init__(
        self,
        display: Callable[[str], Any] | str | None = "auto",
        min_interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
        update: Callable[[Any, str], None] = _update,
    ) -> None:
        self.scalars: dict[str, list[tuple[int, float]]] = {}  # tag -> (step, value) points
        self.histograms: dict[str, list[tuple[int, Any]]] = {}  # tag -> last (step, histo)
        self.min_interval = min_interval  # seconds between renders, at least
        self.clock = clock  # time source for the throttle
        self._display = ipython_display() if display == "auto" else display
        self._update = update  # (handle, html) -> None; IPython's handle.update by default
        self.handle: Any = None  # the display handle, made on the first render
        self.last_render = -float("inf")  # clock() at the last render
        self.dirty = False  # data added since the last render
        self.renders = 0  # renders so far (shown or not)

    # --------------------------------------------------------------- adding
    def add_scalar(self, tag: str, value: float, step: int | None = None) -> None:
        pts = self.scalars.setdefault(tag, [])
        pts.append((len(pts) if step is None else int(step), float(value)))
        self._changed()

    def add_histogram(self, tag: str, histo: Any, step: int | None = None) -> None:
        hs = self.histograms.setdefault(tag, [])
        hs.append((len(hs) if step is None else int(step), histo))
        del hs[:-RIDGES]
        self._changed()

    def add_summary(self, summary: Any, step: int | None = None) -> None:
        """Take every simple_value and histo of a ``Summary`` proto (one render at most)."""
        for v in summary.value:
            kind = v.WhichOneof("value")
            if kind == "simple_value":
                pts = self.scalars.setdefault(v.tag, [])
                pts.append((len(pts) if step is None else int(step), v.simple_value))
            elif kind == "histo":
                hs = self.histograms.setdefault(v.tag, [])
                hs.append((len(hs) if step is None else int(step), v.histo))
                del hs[:-RIDGES]
        self._changed()

    def _changed(self) -> None:
        self.dirty = True
        if self.clock() - self.last_render >= self.min_interval:
            self.render()

    # ------------------------------------------------------------ rendering
    def render(self) -> None:
        """Show the current state now (flush and close call it when dirty)."""
        self.dirty = False
        self.last_render = self.clock()
        self.renders += 1
        if self._display is None:
            return
        text = self.to_html()
        if self.handle is None:
            self.handle = self._display(_Html(text))
        else:
            self._update(self.handle, text)

    def flush(self) -> None:
        if self.dirty:
            self.render()

    close = flush

    def to_html(self) -> str:
        parts = [_line_chart(t, p) for t, p in sorted(self.scalars.items())]
        parts += [_ridgelines(t, h) for t, h in sorted(self.histograms.items())]
        return '<div style="display:flex;flex-wrap:wrap;gap:8px">' + "".join(parts) + "</div>"

    def _repr_html_(self) -> str:
        return self.to_html()


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _line_chart(tag: str, points: list[tuple[int, float]], w: int = 240, h: int = 110) -> str:
    """One small SVG line chart of a scalar's (step, value) points."""
    steps = np.array([p[0] for p in points], dtype=float)
    vals = np.array([p[1] for p in points], dtype=float)
    fin = np.isfinite(vals)
    lo, hi = (vals[fin].min(), vals[fin].max()) if fin.any() else (0.0, 1.0)
    s0, s1 = steps.min(), steps.max()
    xs = 30 + (steps - s0) / ((s1 - s0) or 1) * (w - 36)
    ys = 18 + (hi - vals) / ((hi - lo) or 1) * (h - 32)
    pts = " ".join(f"{x:.1f},{y:.1f}" for x, y, ok in zip(xs, ys, fin) if ok)
    return (
        f'<svg width="{w}" height="{h}" style="font:10px sans-serif">'
        f'<text x="4" y="11" font-weight="bold">{html.escape(tag)}</text>'
        f'<text x="{w - 4}" y="11" text-anchor="end">{_fmt(vals[-1])} @ {int(steps[-1])}</text>'
        f'<text x="2" y="24">{_fmt(hi)}</text><text x="2" y="{h - 14}">{_fmt(lo)}</text>'
        f'<rect x="30" y="16" width="{w - 34}" height="{h - 28}" fill="none" stroke="#ddd"/>'
        f'<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>'
        f'<text x="30" y="{h - 2}">{int(s0)}</text>'
        f'<text x="{w - 4}" y="{h - 2}" text-anchor="end">{int(s1)}</text></svg>'
    )


def _density(histo: Any, lo: float, hi: float) -> np.ndarray:
    """A histogram proto's counts re-binned onto BINS equal bins over [lo, hi]."""
    limits = np.asarray(histo.bucket_limit, dtype=float)
    counts = np.asarray(histo.bucket, dtype=float)
    left = np.concatenate([[histo.min], limits[:-1]])
    centers = (np.clip(left, histo.min, histo.max) + np.clip(limits, histo.min, histo.max)) / 2
    idx = np.clip(((centers - lo) / ((hi - lo) or 1) * BINS).astype(int), 0, BINS - 1)
    return np.bincount(idx, weights=counts, minlength=BINS)


def _ridgelines(tag: str, hs: list[tuple[int, Any]], w: int = 240, h: int = 150) -> str:
    """Stacked SVG ridgelines of a tag's last histograms (oldest at the back, top)."""
    lo = min(hp.min for _, hp in hs)
    hi = max(hp.max for _, hp in hs)
    dens = [_density(hp, lo, hi) for _, hp in hs]
    peak = max(float(d.max()) for d in dens) or 1.0
    n = len(hs)
    gap = (h - 40) / max(n, 1)
    xs = 30 + (np.arange(BINS) + 0.5) / BINS * (w - 36)
    paths = []
    for k, ((step, _), d) in enumerate(zip(hs, dens)):
        base = 24 + (k + 1) * gap
        ys = base - d / peak * gap * 2.5
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in zip(xs, ys))
        shade = int(200 - 150 * (k + 1) / n)
        paths.append(
            f'<polygon points="30,{base:.1f} {pts} {w - 6},{base:.1f}" '
            f'fill="rgb({shade},{shade + 30},230)" stroke="#335" stroke-width="0.5"/>'
            f'<text x="2" y="{base:.1f}">{step}</text>'
        )
    return (
        f'<svg width="{w}" height="{h}" style="font:10px sans-serif">'
        f'<text x="4" y="11" font-weight="bold">{html.escape(tag)}</text>'
        + "".join(paths)
        + f'<text x="30" y="{h - 2}">{_fmt(lo)}</text>'
        f'<text x="{w - 4}" y="{h - 2}" text-anchor="end">{_fmt(hi)}</text></svg>'
    )


# ------------------------------------------------------------------ progress
def _clock_text(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "?"
    m, s = divmod(int(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}" if m >= 60 else f"{m:02d}:{s:02d}"


class progress:
    """Wrap an iterable; show a throttled bar with count, rate and ETA while it runs.

    In IPython the bar is an HTML display updated in place; elsewhere a text
    line on ``file`` (stderr) rewritten with ``\\r``.  The last state always shows.

    >>> import io
    >>> out = io.StringIO()
    >>> sum(progress(range(4), file=out, display=None))
    6
    >>> out.getvalue().rstrip().split("\\r")[-1][:9]
    '4/4 [####'
    """

    def __init__(
        self,
        iterable: Iterable[Any],
        total: int | None = None,
        desc: str = "",
        min_interval: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
        display: Callable[[str], Any] | str | None = "auto",
        file: Any = None,
    ) -> None:
        self.iterable = iterable
        if total is None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total = total  # expected items, or None when unknown
        self.desc = desc
        self.n = 0  # items done
        self.min_interval = min_interval
        self.clock = clock
        self._display = ipython_display() if display == "auto" else display
        self.file = file  # text fallback stream; None: sys.stderr when it prints
        self.handle: Any = None
        self.start = clock()
        self.last_render = -float("inf")
        self.renders = 0

    def __len__(self) -> int:
        return self.total if self.total is not None else len(self.iterable)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[Any]:
        self.start = self.clock()
        self.render()
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.render(final=True)

    def update(self, n: int = 1) -> None:
        self.n += n
        if self.clock() - self.last_render >= self.min_interval:
            self.render()

    def text(self) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        rate = self.n / elapsed
        width = 24
        if self.total:
            frac = min(self.n / self.total, 1.0)
            bar = "#" * int(frac * width) + "." * (width - int(frac * width))
            eta = (self.total - self.n) / rate if rate > 0 else float("inf")
            head = f"{self.n}/{self.total} [{bar}] {frac:4.0%}"
            tail = f"{rate:.3g} it/s, {_clock_text(elapsed)} elapsed, ETA {_clock_text(eta)}"
        else:
            head = f"{self.n} it"
            tail = f"{rate:.3g} it/s, {_clock_text(elapsed)} elapsed"
        return (f"{self.desc}: " if self.desc else "") + f"{head} {tail}"

    def to_html(self) -> str:
        frac = min(self.n / self.total, 1.0) if self.total else 0.0
        return (
            '<div style="font:12px monospace">'
            f'<progress value="{frac:.4f}" max="1" style="width:240px"></progress> '
            f"{html.escape(self.text())}</div>"
        )

    def render(self, final: bool = False) -> None:
        self.last_render = self.clock()
        self.renders += 1
        if self._display is not None:
            if self.handle is None:
                self.handle = self._display(_Html(self.to_html()))
            elif hasattr(self.handle, "update"):
                _update(self.handle, self.to_html())
            return
        f = self.file if self.file is not None else sys.stderr
        f.write("\r" + self.text() + ("\n" if final else ""))
        f.flush()

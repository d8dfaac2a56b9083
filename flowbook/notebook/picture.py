"""A static SVG picture of a graph, for notebook outputs that must show with no kernel.

The live widget needs a kernel and JavaScript; a notebook opened on GitHub, in
nbviewer or as an nbconvert HTML export has neither.  :func:`picture_svg` draws
the same ``graph`` state (:mod:`flowbook.notebook.snapshot`) and, optionally,
the same ``run`` state (:meth:`flowbook.notebook.live.LiveGraph.run_state`) as
one self-contained SVG string: no script, no external reference, no
``foreignObject``, every name XML-escaped.  :func:`picture_html` wraps it with
a one-line caption, and :func:`picture_bundle` gives both (and the caption as
text) as the mime bundle a GraphWidget displays after itself
(:mod:`flowbook.notebook.widget`).

Design, in the order the drawing is made:

1. **Boxes.**  Every top-level name scope holding more than one op (``a`` for
   ``a/b/c``; an op named ``w`` belongs to scope ``w`` with ``w/read``) becomes
   one box, "k ops" on its second line; other ops are boxes of their own,
   labelled with the last part of their name and their op type.  Edges between
   members of different boxes become one edge between the boxes (solid if any
   of them carries data, dashed if all are control edges).  Past
   ``MAX_BOXES`` boxes (in creation order) the rest become one "+N more" box,
   so the picture stays bounded whatever the graph.
2. **Ranks.**  Edges that close a cycle (loop back edges, or cycles a collapsed
   scope makes) are turned round for the layout only.  A box's rank is its
   longest path from the sources; a box with no inputs then moves down to sit
   just above its first consumer, so constants are drawn where they are used.
3. **Order.**  Edges spanning several ranks pass through dummy points, one per
   rank crossed, so they run between boxes instead of through them.  Barycenter
   sweeps, down and up, reorder each rank to reduce crossings.
4. **Coordinates.**  Each rank is placed by weighted isotonic regression (pool
   adjacent violators): every box as near the mean of its neighbours in the
   next rank as the minimum spacing allows, in a few sweeps.
5. **Drawing.**  Boxes are sized to their text (0.6 x font size per
   character), filled by kind and outlined by run state; edges are smooth paths
   from a box's bottom to the next box's top with an arrowhead marker.  Every
   box carries a ``<title>`` (a browser tooltip) with its full name and type.
6. **The run.**  Ops the run finished get a green outline and, on a third line,
   their time; the failing op is filled red, its message's first line in its
   tooltip; fed ops say "fed"; ops the run never reached stay plain.  A scope
   failed if any member failed, and is done if all its members in the run are.

    >>> svg = picture_svg({"nodes": [
    ...     {"name": "x", "op": "Placeholder", "kind": "placeholder", "inputs": [], "control": []},
    ...     {"name": "y", "op": "Identity", "kind": "op", "inputs": ["x:0"], "control": []}]})
    >>> svg.startswith("<svg") and svg.count('<g class="box ')
    2
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

import networkx as nx

MAX_BOXES = 120  # boxes drawn before the rest become one "+N more" box
MAX_DUMMIES = 2000  # dummy points for long edges; past that the longest edges go straight
MAX_LABEL = 28  # characters of a label or type line before it is cut with "…"
FONT = 13  # px, a box's first line
SMALL = 11  # px, its second and third lines
CHAR = 0.6  # average character width, as a fraction of the font size
PAD_X = 10  # px of space left and right of a box's text
LINE = 14  # px from one text line to the next
PORT = 7  # px between the ends of two edges meeting the same side of a box
GAP_X = 22  # px between neighbouring boxes of a rank
GAP_DUMMY = 10  # px between a dummy point and its neighbours
GAP_Y = 46  # px between ranks
MARGIN = 16  # px around the drawing
SWEEPS = 6  # barycenter sweeps (each down and up) and coordinate sweeps
FONT_FAMILY = "Helvetica, Arial, sans-serif"

# kind -> (fill, outline): calm, distinct on screen and when printed in grey
KIND_STYLE = {
    "placeholder": ("#dbe9f7", "#4a77a8"),
    "variable": ("#fbe7c6", "#a8742a"),
    "constant": ("#ececec", "#858585"),
    "op": ("#ffffff", "#6b6b6b"),
    "scope": ("#e9e4f4", "#7b68a6"),
    "more": ("#ffffff", "#9a9a9a"),
}
OWNER_KINDS = ("placeholder", "variable", "constant")  # a scope named after one is drawn as it
DONE_STROKE = "#2f8f4e"
RUNNING_STROKE = "#d18a00"
ERROR_FILL, ERROR_STROKE = "#fbdcdc", "#c62828"
EDGE_COLOR = "#6f6f6f"
CONTROL_COLOR = "#9d9d9d"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(slots=True)
class _Box:
    """One drawn box: an op, a collapsed scope, or the "+N more" box."""

    label: str
    sub: str  # second line: the op type, or "k ops"
    kind: str  # a KIND_STYLE key
    tip: str  # the tooltip: full name and type
    members: list[str] = field(default_factory=list)
    state: str = ""  # "", "done", "running" or "error"
    time_us: float | None = None
    fed: bool = False  # a placeholder (or any op) the run was fed
    width: float = 0.0

    @property
    def note(self) -> str:
        """The third line: the time the run spent in the box, or "fed", or nothing."""
        if self.time_us is not None:
            return _duration(self.time_us)
        return "fed" if self.fed else ""


@dataclass(slots=True)
class _Marks:
    """What a run state says about each op."""

    done: set[str] = field(default_factory=set)
    running: set[str] = field(default_factory=set)
    pruned: set[str] = field(default_factory=set)
    fed: set[str] = field(default_factory=set)
    error_node: str = ""
    error_line: str = ""
    times: dict[str, float] = field(default_factory=dict)


# --- public API -------------------------------------------------------------------------


def picture_svg(
    graph: dict[str, Any], run: dict[str, Any] | None = None, *, title: str = ""
) -> str:
    """The graph (and the run, if given) as one standalone SVG string.

    ``graph`` is a widget ``graph`` state, ``run`` a widget ``run`` state; ``title``,
    if given, is written above the drawing.

    >>> picture_svg({"nodes": []}).count("No ops yet")
    1
    """
    nodes = list(graph.get("nodes") or ())
    if not nodes:
        return _empty_svg(title)
    marks = _marks(run)
    boxes, edges = _boxes(nodes, marks)
    layout = _Layout(boxes, edges)
    return _render(boxes, layout, title, run is not None and bool(run.get("seq")))


def picture_html(
    graph: dict[str, Any], run: dict[str, Any] | None = None, *, title: str = ""
) -> str:
    """The picture with a one-line caption, in a ``<div class="flowbook-picture">``.

    >>> html = picture_html({"nodes": []}, title="default graph")
    >>> html.startswith('<div class="flowbook-picture"') and "default graph · 0 ops" in html
    True
    """
    return _html(caption(graph, run, title=title), picture_svg(graph, run))


def picture_bundle(
    graph: dict[str, Any], run: dict[str, Any] | None = None, *, title: str = ""
) -> dict[str, str]:
    """The picture as a notebook output's mime bundle: HTML with the caption, the SVG
    alone (for viewers that show images but not HTML), and the caption as text.

    >>> sorted(picture_bundle({"nodes": []}))
    ['image/svg+xml', 'text/html', 'text/plain']
    """
    text, svg = caption(graph, run, title=title), picture_svg(graph, run)
    return {"text/html": _html(text, svg), "image/svg+xml": svg, "text/plain": text}


def _html(text: str, svg: str) -> str:
    return (
        '<div class="flowbook-picture" style="font-family: '
        f'{FONT_FAMILY}; color: #333; max-width: 100%; overflow-x: auto;">'
        f'<div style="font-size: 12px; margin: 0 0 4px 0;">{_xml(text)}</div>'
        f"{svg}</div>"
    )


def caption(graph: dict[str, Any], run: dict[str, Any] | None = None, *, title: str = "") -> str:
    """The picture's one-line caption: the graph, its op count, and what the run did.

    >>> caption({"nodes": [{}] * 3}, {"seq": 4, "phase": "done", "total_us": 563.2})
    'graph · 3 ops · run 4: done in 563 µs'
    >>> caption({"nodes": [{}]}, {"seq": 5, "phase": "error", "error": {"node": "mm"}})
    'graph · 1 op · run 5 failed at mm'
    """
    n = len(graph.get("nodes") or ())
    return f"{title or 'graph'} · {n} op{'' if n == 1 else 's'} · {_run_text(run)}"


def _run_text(run: dict[str, Any] | None) -> str:
    seq = (run or {}).get("seq") or 0
    phase = (run or {}).get("phase") or "idle"
    if not seq or phase == "idle":
        return "not run yet"
    if phase == "error":
        node = ((run or {}).get("error") or {}).get("node") or "an unknown op"
        return f"run {seq} failed at {node}"
    if phase == "running":
        return f"run {seq}: running"
    return f"run {seq}: {phase} in {_duration(float(run.get('total_us') or 0.0))}"


def _duration(us: float) -> str:
    """A time in µs as a short human string.

    >>> [_duration(t) for t in (0.5, 563.2, 1234.0, 2.5e6)]
    ['0.5 µs', '563 µs', '1.2 ms', '2.50 s']
    """
    if us < 10:
        return f"{us:.1f} µs"
    if us < 1000:
        return f"{us:.0f} µs"
    if us < 1e6:
        return f"{us / 1000:.1f} ms"
    return f"{us / 1e6:.2f} s"


# --- boxes and edges --------------------------------------------------------------------


def _marks(run: dict[str, Any] | None) -> _Marks:
    if not run or not run.get("seq"):
        return _Marks()
    error = run.get("error") or {}
    message = str(error.get("message") or "")
    return _Marks(
        done=set(run.get("done") or ()),
        running=set(run.get("running") or ()),
        pruned=set(run.get("pruned") or ()),
        fed=set(run.get("fed") or ()),
        error_node=str(error.get("node") or ""),
        error_line=message.strip().splitlines()[0] if message.strip() else "",
        times={k: float(v) for k, v in (run.get("times_us") or {}).items() if v is not None},
    )


def _groups(nodes: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Box key -> the names of the ops it holds, boxes in creation order."""
    tops: dict[str, list[str]] = {}
    for n in nodes:
        name = str(n.get("name", ""))
        tops.setdefault(name.split("/", 1)[0], []).append(name)
    groups: dict[str, list[str]] = {}
    for top, names in tops.items():
        if len(names) > 1:
            groups[top] = names
        else:
            groups[names[0]] = names
    return groups


def _boxes(
    nodes: list[dict[str, Any]], marks: _Marks
) -> tuple[list[_Box], dict[tuple[int, int], bool]]:
    """The boxes to draw, and edges between them: (from, to) -> True for control only."""
    by_name = {str(n.get("name", "")): n for n in nodes}
    order = {name: i for i, name in enumerate(by_name)}
    groups = sorted(_groups(nodes).items(), key=lambda kv: order[kv[1][0]])
    boxes: list[_Box] = []
    where: dict[str, int] = {}
    for key, names in groups[:MAX_BOXES]:
        for name in names:
            where[name] = len(boxes)
        boxes.append(_make_box(key, names, by_name, marks))
    if len(groups) > MAX_BOXES:
        rest = groups[MAX_BOXES:]
        hidden = sum(len(names) for _, names in rest)
        for _, names in rest:
            for name in names:
                where[name] = len(boxes)
        label = f"+{len(rest)} more"
        sub = f"{hidden} op{'' if hidden == 1 else 's'}"
        boxes.append(_Box(label, sub, "more", f"{label} boxes not drawn ({sub})"))
    return boxes, _box_edges(nodes, where)


def _box_edges(nodes: list[dict[str, Any]], where: dict[str, int]) -> dict[tuple[int, int], bool]:
    edges: dict[tuple[int, int], bool] = {}
    for n in nodes:
        dst = where[str(n.get("name", ""))]
        sources = [(str(t).rsplit(":", 1)[0], False) for t in n.get("inputs") or ()]
        sources += [(str(c).lstrip("^"), True) for c in n.get("control") or ()]
        for name, control in sources:
            src = where.get(name)
            if src is None or src == dst:
                continue
            edges[(src, dst)] = edges.get((src, dst), True) and control
    return edges


def _make_box(
    key: str, names: list[str], by_name: dict[str, dict[str, Any]], marks: _Marks
) -> _Box:
    if len(names) == 1:
        n = by_name[names[0]]
        op = str(n.get("op", ""))
        kind = str(n.get("kind") or "op")
        box = _Box(
            key.rsplit("/", 1)[-1], op, kind if kind in KIND_STYLE else "op", f"{key} ({op})"
        )
    else:
        owner = by_name.get(key)  # variable w with w/read, w/Assign: drawn as a variable
        kind = str(owner.get("kind") or "op") if owner is not None else "scope"
        kind = kind if kind in OWNER_KINDS else "scope"
        box = _Box(key, f"{len(names)} ops", kind, f"{key}/ (scope of {len(names)} ops)")
    box.members = names
    _set_state(box, marks)
    return box


def _set_state(box: _Box, marks: _Marks) -> None:
    members = box.members
    box.fed = any(m in marks.fed for m in members)
    if marks.error_node and marks.error_node in members:
        box.state = "error"
        box.tip += f"\nfailed at {marks.error_node}: {marks.error_line}"
        return
    if any(m in marks.running for m in members):
        box.state = "running"
    ran = [m for m in members if m in marks.pruned] if marks.pruned else []
    if ran and all(m in marks.done for m in ran) and box.state != "running":
        box.state = "done"
        times = [marks.times[m] for m in ran if m in marks.times]
        box.time_us = sum(times) if times else None


# --- layout -----------------------------------------------------------------------------


class _Layout:
    """Ranks, order within ranks, coordinates and edge points for the boxes."""

    def __init__(self, boxes: list[_Box], edges: dict[tuple[int, int], bool]) -> None:
        self.n = len(boxes)
        self.height = _box_height(boxes)
        self.edges = edges
        self.oriented = self._orient()
        tops, bottoms = [0] * self.n, [0] * self.n  # edges meeting each side: room for ports
        for a, b in self.oriented.values():
            bottoms[a] += 1
            tops[b] += 1
        for box, top, bottom in zip(boxes, tops, bottoms):
            box.width = max(_box_width(box), math.ceil(PORT * max(top, bottom) / 0.7))
        self.widths: list[float] = [b.width for b in boxes]
        self.rank = self._ranks()
        self.chains: dict[tuple[int, int], list[int]] = {}
        self.layers: list[list[int]] = [[] for _ in range(max(self.rank) + 1)]
        self._add_dummies()
        self.up: list[list[int]] = [[] for _ in self.widths]
        self.down: list[list[int]] = [[] for _ in self.widths]
        for chain in self.chains.values():
            for a, b in itertools.pairwise(chain):
                if self.rank[b] == self.rank[a] + 1:
                    self.down[a].append(b)
                    self.up[b].append(a)
        self._order()
        self.x = self._place()
        self.width = max(self.x[v] + self.widths[v] / 2 for v in range(len(self.x))) + MARGIN
        self.depth = len(self.layers) * (self.height + GAP_Y) - GAP_Y

    # orientation and ranks

    def _orient(self) -> dict[tuple[int, int], tuple[int, int]]:
        """Each edge -> (top, bottom) for the layout: cycles broken against creation order."""
        g = nx.DiGraph()
        g.add_nodes_from(range(self.n))
        g.add_edges_from(self.edges)
        comp = {}
        for i, members in enumerate(nx.strongly_connected_components(g)):
            for v in members:
                comp[v] = i
        return {(a, b): (b, a) if comp[a] == comp[b] and a > b else (a, b) for a, b in self.edges}

    def _ranks(self) -> list[int]:
        g = nx.DiGraph()
        g.add_nodes_from(range(self.n))
        g.add_edges_from(self.oriented.values())
        rank = [0] * self.n
        order = list(nx.lexicographical_topological_sort(g))
        for v in order:
            for w in g.successors(v):
                rank[w] = max(rank[w], rank[v] + 1)
        for v in reversed(order):  # sources sit just above their first consumer
            succ = [rank[w] for w in g.successors(v)]
            if succ and not g.in_degree(v):
                rank[v] = min(succ) - 1
        return rank

    def _add_dummies(self) -> None:
        for v in range(self.n):
            self.layers[self.rank[v]].append(v)
        spans = sorted(self.oriented.values(), key=lambda e: (self.rank[e[1]] - self.rank[e[0]], e))
        budget = MAX_DUMMIES
        for a, b in spans:
            chain = [a]
            span = self.rank[b] - self.rank[a]
            if 1 < span <= budget + 1:
                budget -= span - 1
                for r in range(self.rank[a] + 1, self.rank[b]):
                    d = len(self.widths)
                    self.widths.append(0.0)
                    self.rank.append(r)
                    self.layers[r].append(d)
                    chain.append(d)
            chain.append(b)
            self.chains[(a, b)] = chain

    # order within ranks

    def _order(self) -> None:
        pos = [0.0] * len(self.widths)
        for layer in self.layers:
            for i, v in enumerate(layer):
                pos[v] = i
        for _ in range(SWEEPS):
            for r in range(1, len(self.layers)):
                self._sort_layer(r, self.up, pos)
            for r in range(len(self.layers) - 2, -1, -1):
                self._sort_layer(r, self.down, pos)
        for r in range(1, len(self.layers)):
            self._sort_layer(r, self.up, pos)

    def _sort_layer(self, r: int, near: list[list[int]], pos: list[float]) -> None:
        layer = self.layers[r]

        def key(v: int) -> float:
            others = near[v]
            return sum(pos[u] for u in others) / len(others) if others else pos[v]

        layer.sort(key=key)
        for i, v in enumerate(layer):
            pos[v] = i

    # coordinates

    def _place(self) -> list[float]:
        x = [0.0] * len(self.widths)
        for layer in self.layers:
            left = 0.0
            for v in layer:
                x[v] = left + self.widths[v] / 2
                left += self.widths[v] + GAP_X
        both = [u + d for u, d in zip(self.up, self.down)]
        for _ in range(SWEEPS):
            for r in range(1, len(self.layers)):
                self._place_layer(r, self.up, x)
            for r in range(len(self.layers) - 2, -1, -1):
                self._place_layer(r, self.down, x)
        for _ in range(2):  # settle between both neighbours: straighter long edges
            for r in range(len(self.layers)):
                self._place_layer(r, both, x)
        shift = MARGIN - min(x[v] - self.widths[v] / 2 for v in range(len(x)))
        return [round(v + shift, 1) for v in x]

    def _place_layer(self, r: int, near: list[list[int]], x: list[float]) -> None:
        layer = self.layers[r]
        want, weight, seps = [], [], [0.0]
        for i, v in enumerate(layer):
            others = near[v]
            want.append(sum(x[u] for u in others) / len(others) if others else x[v])
            weight.append((2.0 if v >= self.n else 1.0) if others else 0.3)
            if i:
                seps.append(seps[-1] + self._gap(layer[i - 1], v))
        fit = _isotonic([w - s for w, s in zip(want, seps)], weight)
        for v, y, s in zip(layer, fit, seps):
            x[v] = y + s

    def _gap(self, a: int, b: int) -> float:
        gap = GAP_X if a < self.n and b < self.n else GAP_DUMMY
        return (self.widths[a] + self.widths[b]) / 2 + gap

    # edge points

    def top(self, v: int, title_h: float) -> float:
        return MARGIN + title_h + self.rank[v] * (self.height + GAP_Y)

    def ports(self) -> dict[tuple[int, int], float]:
        """(vertex, neighbour) -> the x where the edge to that neighbour leaves the vertex."""
        out: dict[tuple[int, int], float] = {}
        for v in range(self.n):
            for near in (self.up[v], self.down[v]):
                others = sorted(near, key=lambda u: (self.x[u], u))
                step = min(12.0, self.widths[v] * 0.7 / max(len(others), 1))
                for i, u in enumerate(others):
                    out[(v, u)] = round(self.x[v] + (i - (len(others) - 1) / 2) * step, 1)
        return out

    def edge_points(self, edge: tuple[int, int], title_h: float, ports: dict) -> list[tuple]:
        """Points of an edge in drawing order, each (x, y, "M"; "C": a curve across the gap
        between ranks; "L": a straight line down a rank, past its boxes)."""
        top, bottom = self.oriented[edge]
        chain = self.chains[(top, bottom)]
        h = self.height
        pts = [(ports.get((top, chain[1]), self.x[top]), self.top(top, title_h) + h)]
        how: list[str] = []
        for v in chain[1:-1]:
            pts += [(self.x[v], self.top(v, title_h)), (self.x[v], self.top(v, title_h) + h)]
            how += ["C", "L"]
        pts.append((ports.get((bottom, chain[-2]), self.x[bottom]), self.top(bottom, title_h)))
        how.append("C")
        if edge != (top, bottom):  # drawn against the layout: from the lower box up
            pts.reverse()
            how.reverse()
        return [(*pts[0], "M")] + [(*p, k) for p, k in zip(pts[1:], how)]


def _isotonic(values: list[float], weights: list[float]) -> list[float]:
    """The nondecreasing sequence nearest ``values`` in weighted least squares (pool adjacent
    violators).

    >>> _isotonic([1.0, 3.0, 2.0], [1.0, 1.0, 1.0])
    [1.0, 2.5, 2.5]
    """
    blocks: list[list[float]] = []  # [mean, weight, count]
    for v, w in zip(values, weights):
        blocks.append([v, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            total = w1 + w2
            blocks.append([(m1 * w1 + m2 * w2) / total, total, c1 + c2])
    out: list[float] = []
    for mean, _, count in blocks:
        out += [mean] * int(count)
    return out


def _box_height(boxes: list[_Box]) -> float:
    lines = 3 if any(b.note for b in boxes) else 2
    return 12 + FONT + 2 + (lines - 1) * LINE


def _box_width(box: _Box) -> float:
    text = max(
        CHAR * FONT * len(_cut(box.label)),
        CHAR * SMALL * len(_cut(box.sub)),
        CHAR * SMALL * len(box.note),
    )
    return math.ceil(max(text + 2 * PAD_X, 56.0))


def _cut(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


# --- SVG --------------------------------------------------------------------------------


def _xml(text: str) -> str:
    """Text or an attribute value, escaped for XML (and stripped of characters XML forbids).

    >>> _xml('<script>a&b"')
    '&lt;script&gt;a&amp;b&quot;'
    """
    return escape(_NOT_XML.sub("", text), {'"': "&quot;"})


def _svg_open(width: float, height: float, label: str) -> str:
    w, h = math.ceil(width), math.ceil(height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" '
        f'height="{h}" role="img" font-family="{FONT_FAMILY}" '
        f'style="max-width: 100%; height: auto; background: #ffffff;">'
        f"<title>{_xml(label)}</title>"
    )


def _empty_svg(title: str) -> str:
    head = (
        f'<text x="{MARGIN}" y="{MARGIN + 12}" font-size="13" font-weight="600" fill="#333">{_xml(title)}</text>'
        if title
        else ""
    )
    y = MARGIN + (24 if title else 0) + 20
    return (
        _svg_open(max(200, CHAR * 13 * len(title) + 2 * MARGIN), y + MARGIN, title or "empty graph")
        + head
        + f'<text x="{MARGIN}" y="{y}" font-size="13" fill="#777">No ops yet</text></svg>'
    )


def _render(boxes: list[_Box], layout: _Layout, title: str, ran: bool) -> str:
    title_h = 24.0 if title else 0.0
    legend = _legend(boxes, ran)
    legend_y = MARGIN + title_h + layout.depth + 22
    width = max(layout.width, legend[1] + MARGIN, CHAR * 13 * len(title) + 2 * MARGIN)
    height = legend_y + 12 + MARGIN
    parts = [
        _svg_open(width, height, title or "flowbook graph"),
        "<defs>",
        _marker("fb-arrow", EDGE_COLOR),
        _marker("fb-arrow-c", CONTROL_COLOR),
        "</defs>",
    ]
    if title:
        parts.append(
            f'<text x="{MARGIN}" y="{MARGIN + 13}" font-size="14" font-weight="600" '
            f'fill="#222">{_xml(title)}</text>'
        )
    ports = layout.ports()
    for edge in sorted(layout.edges):
        parts.append(_edge_svg(layout.edge_points(edge, title_h, ports), layout.edges[edge]))
    for v, box in enumerate(boxes):
        parts.append(_box_svg(box, layout.x[v], layout.top(v, title_h), layout.height))
    parts.append(f'<g transform="translate({MARGIN},{legend_y:.0f})">{legend[0]}</g>')
    parts.append("</svg>")
    return "".join(parts)


def _marker(ident: str, color: str) -> str:
    return (
        f'<marker id="{ident}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        f'markerHeight="7" markerUnits="userSpaceOnUse" orient="auto">'
        f'<path d="M0,0 L10,5 L0,10 z" fill="{color}"/></marker>'
    )


def _edge_svg(points: list[tuple], control: bool) -> str:
    d = []
    prev = points[0]
    for x, y, how in points:
        if how == "C":
            mid = (prev[1] + y) / 2
            d.append(f"C{prev[0]:.1f},{mid:.1f} {x:.1f},{mid:.1f} {x:.1f},{y:.1f}")
        else:
            d.append(f"{how}{x:.1f},{y:.1f}")
        prev = (x, y)
    if control:
        style = f'stroke="{CONTROL_COLOR}" stroke-dasharray="4 3" marker-end="url(#fb-arrow-c)"'
    else:
        style = f'stroke="{EDGE_COLOR}" marker-end="url(#fb-arrow)"'
    kind = "control" if control else "data"
    return f'<path class="edge {kind}" d="{" ".join(d)}" fill="none" stroke-width="1.2" {style}/>'


def _box_svg(box: _Box, cx: float, top: float, height: float) -> str:
    fill, stroke = KIND_STYLE[box.kind]
    width = 1.2
    if box.state == "error":
        fill, stroke, width = ERROR_FILL, ERROR_STROKE, 2.5
    elif box.state == "done":
        stroke, width = DONE_STROKE, 2.5
    elif box.state == "running":
        stroke, width = RUNNING_STROKE, 2.5
    left = cx - box.width / 2
    dash = ' stroke-dasharray="5 3"' if box.kind == "more" else ""
    rx = 10 if box.kind == "scope" else 4
    lines = [
        f'<text x="{cx:.1f}" y="{top + 6 + FONT:.1f}" font-size="{FONT}" fill="#1f1f1f" '
        f'text-anchor="middle">{_xml(_cut(box.label))}</text>',
        f'<text x="{cx:.1f}" y="{top + 6 + FONT + LINE:.1f}" font-size="{SMALL}" fill="#6a6a6a" '
        f'text-anchor="middle">{_xml(_cut(box.sub))}</text>',
    ]
    if box.note:
        lines.append(
            f'<text x="{cx:.1f}" y="{top + 6 + FONT + 2 * LINE:.1f}" font-size="{SMALL}" '
            f'fill="#2f6f44" text-anchor="middle">{box.note}</text>'
        )
    state = f" {box.state}" if box.state else ""
    return (
        f'<g class="box {box.kind}{state}"><title>{_xml(box.tip)}</title>'
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{box.width:.1f}" height="{height:.1f}" '
        f'rx="{rx}" fill="{fill}" stroke="{stroke}" stroke-width="{width}"{dash}/>'
        + "".join(lines)
        + "</g>"
    )


def _legend(boxes: list[_Box], ran: bool) -> tuple[str, float]:
    """The key to the fills (kinds drawn) and outlines (if a run is shown), and its width."""
    kinds = [k for k in KIND_STYLE if k != "more" and any(b.kind == k for b in boxes)]
    items = [(k, *KIND_STYLE[k], 1.2) for k in kinds]
    if ran:
        items += [("done", "#ffffff", DONE_STROKE, 2.5), ("failed", ERROR_FILL, ERROR_STROKE, 2.5)]
    parts, x = [], 0.0
    for name, fill, stroke, width in items:
        parts.append(
            f'<rect x="{x:.0f}" y="0" width="14" height="10" rx="2" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{width}"/>'
            f'<text x="{x + 19:.0f}" y="9" font-size="{SMALL}" fill="#555">{name}</text>'
        )
        x += 19 + CHAR * SMALL * len(name) + 14
    return "".join(parts), x

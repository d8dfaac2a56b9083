/**
 * SVG drawing of a laid-out graph. Every string that comes from the graph
 * (names, op types, shapes, messages) goes into the DOM as text or as an
 * attribute value, never as markup.
 */

import type { Group, Visible } from '../model/hierarchy';
import type { ClusterBox, Edge, Placed, Point, Size } from '../layout/dot';
import { LINE, NORMAL, clip, clipTo, measure, wrapName, type TextStyle } from './text';
import { counterRoom } from '../features/loops/loops';
import { svg } from './dom';

interface BoxText {
  title: string[]; // the name, on lines
  sub: string;
  cut: boolean; // the name was shortened (the tooltip has it whole)
}

/** The font size of a box's name. */
function titleSize(v: Visible, st: TextStyle): number {
  if (v.type === 'group') {
    return st.group;
  }
  if (v.type === 'leaf' && (v.node.kind === 'constant' || v.node.kind === 'copy')) {
    return st.small;
  }
  return st.label;
}

export function boxText(v: Visible, st: TextStyle = NORMAL): BoxText {
  if (v.type === 'more') {
    return { title: [`+${v.hidden} more`], sub: st.present ? '' : 'click to show', cut: false };
  }
  const px = titleSize(v, st);
  const bold = v.type === 'group' || (v.type === 'leaf' && v.node.kind === 'copy');
  if (v.type === 'leaf' && v.node.kind === 'copy') {
    return { title: [v.short], sub: '', cut: false }; // "copy → GPU:0" (copies.ts)
  }
  const { lines, cut } = wrapName(v.short, px, st.lineMax, st.lines, bold);
  if (v.type === 'group') {
    return { title: lines, sub: `${frameWord(v)}${v.opCount} op${v.opCount === 1 ? '' : 's'}`, cut };
  }
  if (v.node.kind === 'constant' || !st.opSub) {
    return { title: lines, sub: '', cut };
  }
  // an unnamed op ("MatMul", "MatMul_3") says its type once
  const redundant = v.short === v.node.op || v.short.replace(/_\d+$/, '') === v.node.op;
  return { title: lines, sub: redundant ? '' : v.node.op, cut };
}

/** "while loop · " for a loop's frame, "cond · " for a cond, else "" (features/loops/). */
function frameWord(g: Group): string {
  return g.frame === 'while' ? 'while loop \u00B7 ' : g.frame === 'cond' ? 'cond \u00B7 ' : '';
}

/** The size of a box: its text with room around it, at least the kind's usual size. */
export function sizeOf(v: Visible, st: TextStyle = NORMAL): Size {
  const t = boxText(v, st);
  const px = titleSize(v, st);
  const bold = v.type === 'group' || (v.type === 'leaf' && v.node.kind === 'copy');
  const room = v.type === 'group' && v.frame ? counterRoom(v) : ''; // a frame's counter line
  const textW = Math.max(
    0,
    ...t.title.map(l => measure(l, px, bold)),
    t.sub ? measure(t.sub, st.sub) : 0,
    room ? measure(room, st.sub, true) : 0
  );
  const textH = t.title.length * px * LINE + (t.sub ? st.sub * LINE : 0) + (room ? st.sub * LINE : 0) + 2 * st.padTop;
  const grow = st.grow;
  if (v.type === 'more') {
    return { w: Math.max(112 * grow, textW + 24), h: Math.max(34 * grow, textH + 10) };
  }
  if (v.type === 'group') {
    return { w: Math.max(100 * grow, textW + 34), h: Math.max(44 * grow, textH + 14) };
  }
  if (v.node.kind === 'constant') {
    return { w: Math.max(44 * grow, textW + 18), h: Math.max(24 * grow, textH + 6) };
  }
  if (v.node.kind === 'copy') {
    return { w: Math.max(72 * grow, textW + 26), h: Math.max(26 * grow, textH + 6) };
  }
  const pad = v.node.kind === 'placeholder' ? 34 : 24;
  return { w: Math.max(76 * grow, textW + pad), h: Math.max(38 * grow, textH + 9) };
}

export function kindOf(v: Visible): string {
  if (v.type === 'more') {
    return 'more';
  }
  if (v.type === 'group') {
    return v.kind === 'series' ? 'series' : 'scope';
  }
  return v.node.kind;
}

/** One box: <g class="fb-node" data-name data-kind> with shape, texts and slots for overlays. */
export function drawBox(v: Visible, p: Placed, parent: Element, st: TextStyle = NORMAL): SVGGElement {
  const kind = kindOf(v);
  const g = svg('g', { class: 'fb-node', 'data-name': v.key, 'data-kind': kind, 'data-status': 'idle' });
  const frame = v.type === 'group' ? v.frame : undefined;
  if (frame) {
    g.setAttribute('data-frame', frame);
  }
  g.setAttribute('transform', `translate(${(p.x - p.w / 2).toFixed(1)},${(p.y - p.h / 2).toFixed(1)})`);
  const { w, h } = p;
  if (kind === 'scope' || kind === 'series') {
    const layers = kind === 'series' ? 2 : 1;
    for (let i = layers; i >= 1; i--) {
      svg('rect', { class: 'fb-stack', x: 3 * i, y: 3 * i, width: w - 3 * layers, height: h - 3 * layers, rx: 7 }, g);
    }
    svg('rect', { class: 'fb-shape', x: 0, y: 0, width: w - 3 * layers, height: h - 3 * layers, rx: 7 }, g);
  } else if (kind === 'copy') {
    // a flat hexagon: no op of the graph has this shape
    const k = Math.min(9, h / 2);
    const pts = [[k, 0], [w - k, 0], [w, h / 2], [w - k, h], [k, h], [0, h / 2]];
    svg('polygon', { class: 'fb-shape', points: pts.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(' ') }, g);
  } else {
    const rx = kind === 'placeholder' ? h / 2 : kind === 'variable' ? 10 : kind === 'constant' ? 5 : 6;
    svg('rect', { class: 'fb-shape', x: 0, y: 0, width: w, height: h, rx }, g);
  }
  svg('rect', { class: 'fb-hatch', x: 0, y: 0, width: w, height: h, rx: 6 }, g);
  svg('rect', { class: 'fb-heat', x: 5, y: h - 7, width: w - 10, height: 4, rx: 2 }, g);
  const t = boxText(v, st);
  const inner = kind === 'scope' ? w - 3 : kind === 'series' ? w - 6 : w;
  const innerH = kind === 'scope' ? h - 3 : kind === 'series' ? h - 6 : h;
  // the name's lines, then the sub line, centred as a block
  const px = titleSize(v, st);
  const lineH = px * LINE;
  const block = t.title.length * lineH + (t.sub ? st.sub * LINE : 0) + (frame ? st.sub * LINE : 0);
  const top = st.padTop + (innerH - 2 * st.padTop - block) / 2; // below the run's pills
  const a = svg('text', { class: 'fb-label', x: inner / 2, y: top, style: `font-size:${px}px` }, g);
  t.title.forEach((line, i) => {
    const span = svg('tspan', { x: (inner / 2).toFixed(1), y: (top + (i + 0.5) * lineH).toFixed(1) }, a);
    span.textContent = line;
  });
  if (t.cut || t.title.length > 1) {
    a.setAttribute('data-full', v.type === 'more' ? '' : v.short);
  }
  if (t.sub) {
    const y = top + t.title.length * lineH + (st.sub * LINE) / 2;
    const b = svg('text', { class: 'fb-sub', x: inner / 2, y: y.toFixed(1), style: `font-size:${st.sub}px` }, g);
    b.textContent = t.sub;
  }
  if (frame) {
    // the loop's counter or the cond's branch (features/loops/ sets it), the block's last line
    const y = top + block - (st.sub * LINE) / 2;
    const attrs = { class: 'fb-frame-count', 'data-name': v.key, x: inner / 2, y: y.toFixed(1) };
    svg('text', { ...attrs, style: `font-size:${st.sub}px` }, g);
  }
  parent.appendChild(g);
  return g;
}

/** The title of an expanded group: "▾ block2 · 30 ops". */
export function clusterTitle(g: Group): string {
  return `\u25BE ${g.short}  \u00B7 ${frameWord(g)}${g.opCount} ops`;
}

/** A frame's counter room in its title band, right of the title (0 for other groups). */
function counterWidth(g: Group, st: TextStyle): number {
  return g.frame ? measure(counterRoom(g), st.cluster, true) + 16 : 0;
}

/** How wide an expanded group must be for its whole title (at most 360 px; 520 presenting). */
export function clusterTitleWidth(g: Group, st: TextStyle = NORMAL): number {
  return Math.min(st.present ? 520 : 360, measure(clusterTitle(g), st.cluster, true) + 24) + counterWidth(g, st);
}

/**
 * An expanded group: a rounded frame (in `parent`) and a clickable title band
 * (in `heads`, a layer above the edges, so an edge entering the group passes
 * under its title instead of through it).
 */
export function drawCluster(
  g: Group,
  b: ClusterBox,
  depth: number,
  parent: Element,
  heads: Element,
  st: TextStyle = NORMAL
): SVGGElement {
  const attrs = {
    'data-name': g.key,
    'data-kind': g.kind === 'series' ? 'series' : 'scope',
    'data-depth': depth % 4,
    ...(g.frame ? { 'data-frame': g.frame } : {})
  };
  const el = svg('g', { class: 'fb-cluster', ...attrs });
  svg('rect', { class: 'fb-cluster-frame', x: b.x1, y: b.y1, width: b.x2 - b.x1, height: b.y2 - b.y1, rx: 10 }, el);
  const head = svg('g', { class: 'fb-cluster-head', ...attrs }, heads);
  svg('rect', { class: 'fb-cluster-hit', x: b.x1, y: b.y1, width: b.x2 - b.x1, height: st.headH, rx: 10 }, head);
  const label = svg(
    'text',
    { class: 'fb-cluster-label', x: b.x1 + 10, y: b.y1 + st.headH / 2, style: `font-size:${st.cluster}px` },
    head
  );
  label.textContent = clipTo(clusterTitle(g), b.x2 - b.x1 - 20 - counterWidth(g, st), st.cluster, true);
  if (g.frame) {
    const at = { class: 'fb-frame-count', 'data-name': g.key, x: b.x2 - 10, y: b.y1 + st.headH / 2 };
    svg('text', { ...at, style: `font-size:${st.cluster}px` }, head);
  }
  const tip = svg('title', {}, head);
  tip.textContent = `${g.key} \u2014 click to collapse`;
  parent.appendChild(el);
  return el;
}

export function splinePath(points: Point[]): string {
  if (points.length === 0) {
    return '';
  }
  const f = (p: Point) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`;
  let d = `M${f(points[0])}`;
  let i = 1;
  for (; i + 2 < points.length; i += 3) {
    d += `C${f(points[i])} ${f(points[i + 1])} ${f(points[i + 2])}`;
  }
  for (; i < points.length; i++) {
    d += `L${f(points[i])}`;
  }
  return d;
}

/** A label's box on the canvas. */
export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** An edge: its path, arrow head and hover title. */
export function drawEdge(e: Edge, route: { points: Point[]; end: Point | null }, parent: Element): SVGGElement {
  const g = svg('g', {
    class: e.control ? 'fb-edge fb-edge-control' : e.copy ? 'fb-edge fb-edge-copy' : 'fb-edge',
    'data-from': e.from.key,
    'data-to': e.to.key
  });
  const width = 1.2 + Math.min(3, Math.log2(e.count) * 0.7);
  svg('path', { class: 'fb-edge-path', d: splinePath(route.points), 'stroke-width': width.toFixed(2) }, g);
  const pts = route.points;
  if (route.end && pts.length > 0) {
    const a = pts[pts.length - 1];
    const b = route.end;
    const dx = b.x - a.x;
    const dy = b.y - a.y;
    const len = Math.hypot(dx, dy) || 1;
    const nx = (-dy / len) * 3.6;
    const ny = (dx / len) * 3.6;
    svg('polygon', {
      class: 'fb-arrow',
      points: `${b.x.toFixed(1)},${b.y.toFixed(1)} ${(a.x + nx).toFixed(1)},${(a.y + ny).toFixed(1)} ${(a.x - nx).toFixed(1)},${(a.y - ny).toFixed(1)}`
    }, g);
  }
  const title = svg('title', {}, g);
  title.textContent = e.control
    ? `control dependency${e.count > 1 ? ` \u00D7${e.count}` : ''}`
    : e.count > 1
      ? `${e.count} tensors, e.g. ${e.tensor} ${e.dtype} ${e.shape}`
      : `${e.tensor}  ${e.dtype} ${e.shape}`;
  parent.appendChild(g);
  return g;
}

/**
 * An edge's shape label (in `layer`), at the route point nearest the middle
 * where it is `free` (overlapping no box, title band or other label); none
 * where there is no such point (the edge's hover title still says it).
 * Returns the box it took.
 */
export function drawEdgeLabel(
  e: Edge,
  pts: Point[],
  layer: Element,
  st: TextStyle,
  free: (r: Rect) => boolean
): Rect | null {
  const text = e.control || pts.length === 0 || !st.edgeLabels ? '' : e.count > 1 ? `\u00D7${e.count}` : clip(e.shape, 24);
  if (!text) {
    return null;
  }
  const px = st.edge;
  const w = measure(text, px, false, true) + 2;
  const h = px * 1.2;
  const mid = Math.floor(pts.length / 2);
  for (let d = 0; d <= mid + 1; d++) {
    for (const i of d === 0 ? [mid] : [mid - d, mid + d]) {
      if (i < 0 || i >= pts.length) {
        continue;
      }
      const r = { x: pts[i].x + 4, y: pts[i].y - h / 2, w, h };
      if (free(r)) {
        const t = svg(
          'text',
          { class: 'fb-edge-label', x: (r.x + 1).toFixed(1), y: pts[i].y.toFixed(1), style: `font-size:${px}px` },
          layer
        );
        t.textContent = text;
        return r;
      }
    }
  }
  return null;
}

/**
 * SVG drawing of a laid-out graph. Every string that comes from the graph
 * (names, op types, shapes, messages) goes into the DOM as text or as an
 * attribute value, never as markup.
 */

import type { Group, Visible } from './hierarchy';
import type { ClusterBox, Edge, Placed, Point, Size } from './layout';

export const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  parent?: Element
): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG_NS, tag);
  for (const k in attrs) {
    e.setAttribute(k, String(attrs[k]));
  }
  if (parent) {
    parent.appendChild(e);
  }
  return e;
}

export function html<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  parent?: Element,
  text?: string
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) {
    e.className = className;
  }
  if (text !== undefined) {
    e.textContent = text;
  }
  if (parent) {
    parent.appendChild(e);
  }
  return e;
}

/** Approximate text width in px for the sans font the boxes use. */
export function textWidth(s: string, px: number): number {
  let w = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    w += c < 128 ? (/[A-Z]|[mwMW@]/.test(s[i]) ? 0.68 : /[ilj.,:;|!'`I\s]/.test(s[i]) ? 0.3 : 0.54) : 1;
  }
  return w * px;
}

/** Cut a label to at most `max` characters, keeping both ends. */
export function clip(s: string, max: number): string {
  if (s.length <= max) {
    return s;
  }
  const head = Math.ceil((max - 1) * 0.6);
  return s.slice(0, head) + '\u2026' + s.slice(s.length - (max - 1 - head));
}

interface BoxText {
  title: string;
  sub: string;
}

export function boxText(v: Visible): BoxText {
  if (v.type === 'more') {
    return { title: `+${v.hidden} more`, sub: 'click to show' };
  }
  if (v.type === 'group') {
    return { title: clip(v.short, 28), sub: `${v.opCount} op${v.opCount === 1 ? '' : 's'}` };
  }
  if (v.node.kind === 'constant') {
    return { title: clip(v.short, 20), sub: '' };
  }
  if (v.node.kind === 'copy') {
    return { title: v.short, sub: '' }; // "copy → GPU:0" (copies.ts)
  }
  // an unnamed op ("MatMul", "MatMul_3") says its type once
  const redundant = v.short === v.node.op || v.short.replace(/_\d+$/, '') === v.node.op;
  return { title: clip(v.short, 28), sub: redundant ? '' : v.node.op };
}

export function sizeOf(v: Visible): Size {
  const t = boxText(v);
  if (v.type === 'more') {
    return { w: 112, h: 34 };
  }
  if (v.type === 'group') {
    return { w: Math.max(100, textWidth(t.title, 13) + 34, textWidth(t.sub, 11) + 34), h: 44 };
  }
  if (v.node.kind === 'constant') {
    return { w: Math.max(44, textWidth(t.title, 11) + 18), h: 24 };
  }
  if (v.node.kind === 'copy') {
    return { w: Math.max(72, textWidth(t.title, 11) + 26), h: 26 };
  }
  const pad = v.node.kind === 'placeholder' ? 34 : 24;
  return { w: Math.max(76, textWidth(t.title, 12) + pad, textWidth(t.sub, 10.5) + pad), h: 38 };
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
export function drawBox(v: Visible, p: Placed, parent: Element): SVGGElement {
  const kind = kindOf(v);
  const g = svg('g', { class: 'fb-node', 'data-name': v.key, 'data-kind': kind, 'data-status': 'idle' });
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
  const t = boxText(v);
  const inner = kind === 'scope' ? w - 3 : kind === 'series' ? w - 6 : w;
  const cx = inner / 2;
  const innerH = kind === 'scope' ? h - 3 : kind === 'series' ? h - 6 : h;
  if (t.sub) {
    const a = svg('text', { class: 'fb-label', x: cx, y: innerH / 2 - 2 }, g);
    a.textContent = t.title;
    const b = svg('text', { class: 'fb-sub', x: cx, y: innerH / 2 + 11 }, g);
    b.textContent = t.sub;
  } else {
    const a = svg('text', { class: 'fb-label', x: cx, y: innerH / 2 + 4 }, g);
    a.textContent = t.title;
  }
  parent.appendChild(g);
  return g;
}

/** The title of an expanded group: "▾ block2 · 30 ops". */
export function clusterTitle(g: Group): string {
  return `\u25BE ${g.short}  \u00B7 ${g.opCount} ops`;
}

/** How wide an expanded group must be for its whole title (at most 360 px). */
export function clusterTitleWidth(g: Group): number {
  return Math.min(360, textWidth(clusterTitle(g), 12.5) + 24);
}

/** The height of an expanded group's clickable title band. */
export const CLUSTER_HEAD_H = 22;

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
  heads: Element
): SVGGElement {
  const attrs = {
    'data-name': g.key,
    'data-kind': g.kind === 'series' ? 'series' : 'scope',
    'data-depth': depth % 4
  };
  const el = svg('g', { class: 'fb-cluster', ...attrs });
  svg('rect', { class: 'fb-cluster-frame', x: b.x1, y: b.y1, width: b.x2 - b.x1, height: b.y2 - b.y1, rx: 10 }, el);
  const head = svg('g', { class: 'fb-cluster-head', ...attrs }, heads);
  svg('rect', { class: 'fb-cluster-hit', x: b.x1, y: b.y1, width: b.x2 - b.x1, height: CLUSTER_HEAD_H, rx: 10 }, head);
  const label = svg('text', { class: 'fb-cluster-label', x: b.x1 + 10, y: b.y1 + 15 }, head);
  const room = Math.max(6, Math.floor((b.x2 - b.x1 - 20) / 6.4));
  label.textContent = clip(clusterTitle(g), room);
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

/** Whether a point lies in the title band of one of the clusters drawn. */
export type Covered = (p: Point) => boolean;

/**
 * An edge: its path, arrow head, hover title and (in `labels`) its shape
 * label, at the route point nearest the middle that no cluster title covers.
 */
export function drawEdge(
  e: Edge,
  route: { points: Point[]; end: Point | null },
  parent: Element,
  labels: Element | null,
  covered: Covered = () => false
): SVGGElement {
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
  if (labels && !e.control && pts.length > 0) {
    const text = e.count > 1 ? `\u00D7${e.count}` : e.shape;
    if (text) {
      const m = labelPoint(pts, covered);
      const t = svg('text', { class: 'fb-edge-label', x: (m.x + 4).toFixed(1), y: (m.y + 3).toFixed(1) }, labels);
      t.textContent = clip(text, 24);
    }
  }
  return g;
}

/** The route point nearest the middle that is not under a cluster title (else the middle). */
function labelPoint(pts: Point[], covered: Covered): Point {
  const mid = Math.floor(pts.length / 2);
  for (let d = 0; d < pts.length; d++) {
    for (const i of [mid - d, mid + d]) {
      if (i >= 0 && i < pts.length && !covered(pts[i]) && !covered({ x: pts[i].x, y: pts[i].y + 3 })) {
        return pts[i];
      }
    }
  }
  return pts[mid];
}

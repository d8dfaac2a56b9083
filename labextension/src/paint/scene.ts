/**
 * Scene: the SVG of one frame (frame.ts) and the marks drawn on it, and
 * the message shown over it (no ops yet, or why there is no layout).
 *
 * State it owns: the element of each box and edge drawn, and the boxes by
 * key (what a click or hover hit). `draw` puts a frame on screen in layers
 * (clusters, edges, edge labels, cluster heads, boxes); `paint` sets each
 * box's run state and badges (badges.ts) on the elements already drawn;
 * `markSelected`, `markMatches` and `flash` set classes on them.
 */

import type { Group, Hierarchy, Visible } from '../model/hierarchy';
import type { Edge, Layout, Placed, Point } from '../layout/dot';
import { drawBox, drawCluster, drawEdge, drawEdgeLabel, type Rect } from './draw';
import { html, svg } from './dom';
import { drawBadges } from './badges';
import type { BoxState } from '../model/overlay';
import type { Frame } from '../layout/frame';
import { NORMAL } from './text';

const MAX_EDGE_LABELS = 400; // past this many edges, none is labelled
const FLASH_MS = 1500;

export class Scene {
  readonly svg: SVGSVGElement;
  /** The group that holds the drawing (the camera moves it). */
  readonly el: SVGGElement;
  private readonly message: HTMLDivElement;
  private readonly hatchId: string;
  private drawnLayout: Layout | null = null;
  private badgeScale = 1; // the run's pills, times their usual size (present mode: bigger)
  private readonly boxEls = new Map<Visible, SVGGElement>();
  private readonly edgeEls = new Map<Edge, SVGGElement>();
  private readonly keyToBox = new Map<string, Visible>();
  private flashTimer = 0;

  /** `uid` names the hatch pattern, one per view on the page. */
  constructor(viewport: HTMLElement, uid: number) {
    const svgEl = (this.svg = svg('svg', { class: 'fb-svg', width: '100%', height: '100%' }, viewport));
    this.hatchId = `fb-hatch-${uid}`;
    const defs = svg('defs', {}, svgEl);
    const pat = svg(
      'pattern',
      { id: this.hatchId, width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
      defs
    );
    svg('rect', { width: 6, height: 6, fill: 'rgba(120,120,120,0.10)' }, pat);
    svg('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: 'rgba(90,90,90,0.35)', 'stroke-width': 2 }, pat);
    this.el = svg('g', { class: 'fb-scene' }, svgEl);
    this.message = html('div', 'fb-message', viewport);
  }

  /** Show `text` over the scene; without, a hint when the graph has no ops (`noOps`), else nothing. */
  showMessage(text: string | undefined, noOps: boolean): void {
    const m = this.message;
    if (text) {
      m.textContent = text;
      m.hidden = false;
    } else if (noOps) {
      m.replaceChildren();
      html('div', 'fb-message-title', m, 'No ops yet \u2014 build some in a cell');
      html('div', 'fb-message-sub', m, 'e.g.  a = tf.constant(2.0);  b = a * 3');
      m.hidden = false;
    } else {
      m.hidden = true;
    }
  }

  /** The layout drawn (none before the first, or when nothing is visible). */
  get layout(): Layout | null {
    return this.drawnLayout;
  }

  /** How many boxes are drawn. */
  get size(): number {
    return this.boxEls.size;
  }

  /** The drawn box with this key. */
  boxOf(key: string): Visible | undefined {
    return this.keyToBox.get(key);
  }

  /** The drawn box an event target is in. */
  boxAt(target: Element): Visible | undefined {
    const nodeEl = target.closest?.('.fb-node');
    return nodeEl ? this.keyToBox.get(nodeEl.getAttribute('data-name') ?? '') : undefined;
  }

  /** Where a box is drawn. */
  placed(v: Visible | undefined): Placed | undefined {
    return v && this.layout ? this.layout.boxes.get(v) : undefined;
  }

  /** The top centre of the box with key `key`, else of the drawn cluster of `group`. */
  anchorPoint(key: string, group: Group | undefined): Point | null {
    const p = this.placed(this.keyToBox.get(key));
    if (p) {
      return { x: p.x, y: p.y - p.h / 2 };
    }
    const b = group ? this.layout?.clusters.get(group) : undefined;
    return b ? { x: (b.x1 + b.x2) / 2, y: b.y1 } : null;
  }

  /** Draw a frame (nothing for none, or one with no layout); `h` gives the clusters' depths. */
  draw(frame: Frame | null, h: Hierarchy): void {
    const scene = this.el;
    scene.replaceChildren();
    this.boxEls.clear();
    this.edgeEls.clear();
    this.keyToBox.clear();
    const l = (this.drawnLayout = frame ? frame.layout : null);
    if (!frame || !l) {
      return;
    }
    // the layout's size, in scene units (tests check fits against it)
    scene.setAttribute('data-width', l.width.toFixed(1));
    scene.setAttribute('data-height', l.height.toFixed(1));
    const clusters = svg('g', { class: 'fb-clusters' }, scene);
    const edgeLayer = svg('g', { class: 'fb-edges' }, scene);
    const labelLayer = frame.edges.length <= MAX_EDGE_LABELS ? svg('g', { class: 'fb-edge-labels' }, scene) : null;
    const headLayer = svg('g', { class: 'fb-cluster-heads' }, scene);
    const nodeLayer = svg('g', { class: 'fb-nodes' }, scene);
    const st = frame.style;
    this.badgeScale = st.badge / NORMAL.badge;
    const pill = 8 * this.badgeScale; // how far the pills reach past a box's top and right
    // what an edge label must not cover: boxes, open scopes' title bands, other labels
    const taken: Rect[] = [];
    for (const g of frame.vis.clusters) {
      const b = l.clusters.get(g);
      if (b) {
        drawCluster(g, b, h.ancestors(g).length - 1, clusters, headLayer, st);
        taken.push({ x: b.x1, y: b.y1, w: b.x2 - b.x1, h: st.headH });
      }
    }
    for (const b of frame.boxes) {
      const p = l.boxes.get(b);
      if (p) {
        taken.push({ x: p.x - p.w / 2, y: p.y - p.h / 2 - pill, w: p.w + pill, h: p.h + pill });
      }
    }
    const inBounds = (r: Rect) => r.x >= 0 && r.y >= 0 && r.x + r.w <= l.width && r.y + r.h <= l.height;
    const free = (r: Rect) => inBounds(r) && !taken.some(t => overlaps(r, t, 2));
    for (const e of frame.edges) {
      const route = l.edges.get(e);
      if (route) {
        this.edgeEls.set(e, drawEdge(e, route, edgeLayer));
        const r = labelLayer ? drawEdgeLabel(e, route.points, labelLayer, st, free) : null;
        if (r) {
          taken.push(r);
        }
      }
    }
    for (const b of frame.boxes) {
      const p = l.boxes.get(b);
      if (!p) {
        continue;
      }
      const el = drawBox(b, p, nodeLayer, st);
      el.querySelector('.fb-hatch')?.setAttribute('fill', `url(#${this.hatchId})`);
      this.boxEls.set(b, el);
      this.keyToBox.set(b.key, b);
    }
  }

  /**
   * Show each drawn box's run state (`stateOf`): status, step, dimmed or
   * stale, badges; dim the edges of dimmed boxes. Returns the slowest box's
   * kernel time (µs, 0 when none), the top of the heat scale.
   */
  paint(stateOf: (v: Visible) => BoxState): number {
    const states = new Map<Visible, BoxState>();
    let maxTime = 0;
    for (const [v] of this.boxEls) {
      const st = stateOf(v);
      states.set(v, st);
      if (st.timeUs !== null && st.timeUs > maxTime) {
        maxTime = st.timeUs;
      }
    }
    const dimmed = new Set<Visible>();
    for (const [v, el] of this.boxEls) {
      const st = states.get(v)!;
      el.setAttribute('data-status', st.status);
      setFlag(el, 'fb-dim', st.dim);
      setFlag(el, 'fb-untaken', st.untaken);
      setFlag(el, 'fb-stale', st.stale);
      if (st.dim) {
        dimmed.add(v);
      }
      if (st.step) {
        el.setAttribute('data-step', st.step);
      } else {
        el.removeAttribute('data-step');
      }
      const p = this.placed(v);
      if (p) {
        // where it ran; a copy node says it in its label
        drawBadges(el, p, st, maxTime, v.type === 'leaf' && v.copy ? '' : st.device, this.badgeScale);
      }
    }
    for (const [e, el] of this.edgeEls) {
      setFlag(el, 'fb-dim', dimmed.has(e.from) || dimmed.has(e.to));
    }
    return maxTime;
  }

  /** Mark the selected box (none: clear the mark). */
  markSelected(v: Visible | undefined): void {
    for (const el of this.el.querySelectorAll('.fb-selected')) {
      el.classList.remove('fb-selected');
    }
    const el = v && this.boxEls.get(v);
    el?.classList.add('fb-selected');
  }

  /** Mark the boxes standing for search matches; the one at `current` as the match shown. */
  markMatches(matches: (Visible | undefined)[], current: number): void {
    for (const el of this.el.querySelectorAll('.fb-match, .fb-match-current')) {
      el.classList.remove('fb-match', 'fb-match-current');
    }
    matches.forEach((v, i) => {
      const el = v && this.boxEls.get(v);
      el?.classList.add(i === current ? 'fb-match-current' : 'fb-match');
    });
  }

  /** Briefly highlight a box. */
  flash(v: Visible | undefined): void {
    const el = v && this.boxEls.get(v);
    if (el) {
      el.classList.add('fb-flash');
      window.clearTimeout(this.flashTimer);
      this.flashTimer = window.setTimeout(() => el.classList.remove('fb-flash'), FLASH_MS);
    }
  }

  dispose(): void {
    window.clearTimeout(this.flashTimer);
  }
}

function setFlag(el: Element, cls: string, on: boolean): void {
  if (on) {
    el.classList.add(cls);
  } else {
    el.classList.remove(cls);
  }
}

/** Whether two boxes come closer than `gap`. */
function overlaps(a: Rect, b: Rect, gap: number): boolean {
  return a.x < b.x + b.w + gap && b.x < a.x + a.w + gap && a.y < b.y + b.h + gap && b.y < a.y + a.h + gap;
}

/**
 * GraphView: the graph as the notebook widget and the side panel show it.
 *
 * State it owns:
 * - `graph`, `overlay` (run + stepper): the last state the host sent
 * - `h`: the name-scope hierarchy of `graph`, rebuilt when the graph changes
 * - `expanded`, `limits`: what the user opened, by group key (op names are
 *   stable across cell re-runs, so this survives graph updates)
 * - `vis`, `layout`, `boxEls`: what is on screen now
 * - `copies`: the copy nodes of the runs shown (by name, readers merged over
 *   runs), laid out beside the graph's boxes (copies.ts); `copySig` says
 *   which set the layout holds, so a run relayouts only when it brings a new
 *   copy (a CPU-only run clears them)
 *
 * The loop: setGraph / a click that opens a group -> requestLayout() ->
 * (next tick, latest request wins) visible part -> DOT -> Graphviz -> SVG
 * -> applyOverlay(). Run and stepper updates only call applyOverlay(),
 * which changes attributes on the boxes already drawn; no layout.
 */

import { PAGE, Hierarchy, VisibleGraph, type Expansion, type Group, type Leaf, type Visible } from './hierarchy';
import { readLayout, toDot, visibleEdges, type ClusterBox, type Edge, type Layout, type LayoutInput, type Point } from './layout';
import { CLUSTER_HEAD_H, clusterTitleWidth, drawBox, drawCluster, drawEdge, html, sizeOf, svg, clip, textWidth } from './draw';
import { Overlay, deviceColor, formatTime, heatColor, HEAT_GRADIENT, type BoxState } from './overlay';
import { copyDetails, groupDetails, leafDetails, tooltipContent } from './details';
import { EMPTY_COPIES, copySignature, layoutCopies, mergeCopy, type CopyLayout } from './copies';
import { getViz } from './viz';
import {
  EMPTY_RUN,
  EMPTY_STEPPER,
  normalizeGraph,
  normalizeRun,
  normalizeStepper,
  type CopySpec,
  type GraphState,
  type StepAction,
  type StepperState,
  type ViewCallbacks
} from './types';

export const SMALL_GRAPH = 60; // graphs with at most this many ops start fully expanded
const MAX_REVEAL = 20; // search opens the scopes of at most this many matches
const MIN_READABLE = 0.5; // the first view of a big graph zooms out no further
const MAX_COPIES = 2000; // copies kept over runs; past it, only the latest run's

let instances = 0;

interface Anchor {
  key: string;
  sx: number; // screen position inside the viewport
  sy: number;
}

export class GraphView {
  readonly root: HTMLDivElement;
  private readonly cb: ViewCallbacks;
  private readonly uid = ++instances;
  private readonly search: HTMLInputElement;
  private readonly searchCount: HTMLSpanElement;
  private readonly summary: HTMLSpanElement;
  private readonly stepBar: HTMLDivElement;
  private readonly stepMessage: HTMLSpanElement;
  private readonly runToButton: HTMLButtonElement;
  private readonly viewport: HTMLDivElement;
  private readonly svgEl: SVGSVGElement;
  private readonly scene: SVGGElement;
  private readonly details: HTMLDivElement;
  private readonly tooltip: HTMLDivElement;
  private readonly legend: HTMLDivElement;
  private readonly legendMax: HTMLSpanElement;
  private readonly legendHeat: HTMLSpanElement;
  private readonly legendDevices: HTMLSpanElement;
  private legendPlacement: Record<string, string> | null = null; // the placement the device legend shows
  private readonly message: HTMLDivElement;
  private readonly resizeObserver: ResizeObserver | null;

  private graph: GraphState = normalizeGraph(null);
  private overlay = new Overlay(EMPTY_RUN, EMPTY_STEPPER);
  private h = new Hierarchy([]);
  private expanded = new Map<string, boolean>();
  private limits = new Map<string, number>();
  private autoOpen = new Set<string>();
  private vis: VisibleGraph | null = null;
  private layout: Layout | null = null;
  private edges: Edge[] = [];
  private boxes: Visible[] = []; // laid out: the visible graph's boxes, then the copy boxes
  private copies = new Map<string, CopySpec>(); // copy name -> spec, over the runs shown
  private copySig = ''; // copySignature of `copies` when last laid out
  private copyLayout: CopyLayout = EMPTY_COPIES;
  private boxEls = new Map<Visible, SVGGElement>();
  private edgeEls = new Map<Edge, SVGGElement>();
  private keyToBox = new Map<string, Visible>();
  private selected = ''; // op name or group key shown in the details pane
  private matches: string[] = []; // names of the ops and copy nodes found
  private matchIndex = -1;
  private tx = 0;
  private ty = 0;
  private k = 1;
  private needsFit = true;
  private token = 0; // the newest layout request
  private layouts = 0; // layouts done (data-flowbook-layouts: tests check runs do not relayout)
  private pendingAnchor: Anchor | null = null;
  private pendingFocus: string | null = null;
  private lastStepCurrent: string | null = null;
  private highlightTimer = 0;
  private searchTimer = 0;
  private disposed = false;

  constructor(parent: HTMLElement, callbacks: ViewCallbacks = {}) {
    this.cb = callbacks;
    const root = (this.root = html('div', 'flowbook-graph', parent));
    root.tabIndex = -1;
    root.dataset.flowbookNodes = '0';
    root.dataset.flowbookVersion = '-1';

    // toolbar: search, fit, collapse, summary
    const bar = html('div', 'fb-toolbar', root);
    const search = (this.search = html('input', 'fb-search', bar));
    search.type = 'search';
    search.placeholder = 'Search ops\u2026';
    search.setAttribute('aria-label', 'Search ops by name');
    this.searchCount = html('span', 'fb-search-count', bar);
    const fit = html('button', 'fb-button fb-fit', bar, 'Fit');
    fit.title = 'Fit the whole graph in view';
    const collapse = html('button', 'fb-button fb-collapse-all', bar, 'Collapse all');
    collapse.title = 'Collapse every name scope';
    this.summary = html('span', 'fb-summary', bar);

    // stepper toolbar
    const step = (this.stepBar = html('div', 'fb-stepbar', root));
    step.hidden = true;
    html('span', 'fb-stepbar-title', step, 'Stepper');
    const mk = (cls: string, text: string, action: StepAction, title: string) => {
      const b = html('button', `fb-button ${cls}`, step, text);
      b.title = title;
      b.addEventListener('click', () => this.act(action));
      return b;
    };
    mk('fb-step', 'Step', 'step', 'Run the next ready op');
    this.runToButton = mk('fb-run-to', 'Run to selected', 'run_to', 'Run until the selected op is done');
    mk('fb-cont', 'Continue', 'cont', 'Run the rest of the step');
    mk('fb-reset', 'Reset', 'reset', 'Start the step again');
    this.stepMessage = html('span', 'fb-stepbar-message', step);

    // the canvas
    const vp = (this.viewport = html('div', 'fb-viewport', root));
    this.svgEl = svg('svg', { class: 'fb-svg', width: '100%', height: '100%' }, vp);
    const defs = svg('defs', {}, this.svgEl);
    const pat = svg(
      'pattern',
      { id: this.hatchId, width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
      defs
    );
    svg('rect', { width: 6, height: 6, fill: 'rgba(120,120,120,0.10)' }, pat);
    svg('line', { x1: 0, y1: 0, x2: 0, y2: 6, stroke: 'rgba(90,90,90,0.35)', 'stroke-width': 2 }, pat);
    this.scene = svg('g', { class: 'fb-scene' }, this.svgEl);
    this.message = html('div', 'fb-message', vp);
    this.details = html('div', 'fb-details', vp);
    this.details.hidden = true;
    this.tooltip = html('div', 'fb-tooltip', vp);
    this.tooltip.hidden = true;
    this.legend = html('div', 'fb-legend', vp);
    this.legend.hidden = true;
    const heatLegend = (this.legendHeat = html('span', 'fb-legend-heat', this.legend));
    html('span', 'fb-legend-title', heatLegend, 'kernel time');
    html('span', 'fb-legend-min', heatLegend, '0');
    const bar2 = html('span', 'fb-legend-bar', heatLegend);
    bar2.style.background = `linear-gradient(to right, ${HEAT_GRADIENT.join(',')})`;
    this.legendMax = html('span', 'fb-legend-max', heatLegend);
    this.legendDevices = html('span', 'fb-legend-devices', this.legend);

    fit.addEventListener('click', () => this.fit());
    collapse.addEventListener('click', () => this.collapseAll());
    search.addEventListener('input', () => {
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => this.runSearch(), 150);
    });
    search.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        window.clearTimeout(this.searchTimer);
        if (this.matchIndex < 0 || this.search.value !== this.lastQuery) {
          this.runSearch();
        } else {
          this.nextMatch(ev.shiftKey ? -1 : 1);
        }
      } else if (ev.key === 'Escape') {
        this.search.value = '';
        this.runSearch();
      }
    });
    root.addEventListener('keydown', ev => {
      if (ev.key === 'Escape' && ev.target !== this.search) {
        this.select('');
      }
    });
    this.installPointer();
    this.resizeObserver =
      typeof ResizeObserver === 'undefined'
        ? null
        : new ResizeObserver(() => {
            if (this.needsFit && this.layout && this.viewport.clientWidth > 0) {
              this.fit(true);
            }
          });
    this.resizeObserver?.observe(vp);
    this.showMessage();
  }

  private get hatchId(): string {
    return `fb-hatch-${this.uid}`;
  }

  // ------------------------------------------------------------ host API
  setGraph(g: unknown): void {
    const graph = normalizeGraph(g);
    const newId = graph.id !== this.graph.id;
    this.graph = graph;
    this.h = new Hierarchy(graph.nodes);
    this.autoOpen = new Set();
    if (newId) {
      this.needsFit = true;
      this.copies.clear(); // another graph: the copies seen were between its ops
      this.copySig = '';
      this.updateCopies();
    }
    let top = this.h.root;
    while (top.children.length === 1 && top.children[0].type === 'group') {
      top = top.children[0];
      this.autoOpen.add(top.key);
    }
    this.revealStepCurrent();
    this.requestLayout();
  }

  setRun(r: unknown): void {
    this.overlay.setRun(normalizeRun(r));
    if (this.updateCopies()) {
      this.requestLayout();
    }
    this.applyOverlay();
  }

  setStepper(s: unknown): void {
    const st = normalizeStepper(s);
    this.overlay.setStepper(st);
    this.updateStepBar(st);
    if (st.active && st.current && st.current !== this.lastStepCurrent) {
      this.lastStepCurrent = st.current;
      if (this.revealStepCurrent()) {
        this.pendingFocus = st.current;
        this.requestLayout();
      } else {
        this.focusIfOffscreen(st.current);
      }
    }
    if (!st.active) {
      this.lastStepCurrent = null;
    }
    if (this.updateCopies()) {
      this.requestLayout();
    }
    this.applyOverlay();
  }

  /** Select an op or group by name, as if clicked (and tell the host when `notify`). */
  select(name: string, notify = true): void {
    this.selected = name;
    for (const el of this.scene.querySelectorAll('.fb-selected')) {
      el.classList.remove('fb-selected');
    }
    const box = this.keyToBox.get(name) ?? this.copyLayout.boxOf.get(name);
    if (box) {
      this.boxEls.get(box)?.classList.add('fb-selected');
    }
    this.renderDetails();
    this.runToButton.disabled = !this.isOp(name);
    if (notify) {
      // an op, a copy node, or a box standing for several copies (the host echoes it back)
      const leaf = this.h.leaves.get(name) ?? this.copyLayout.byName.get(name) ?? this.copyBox(name);
      this.cb.onSelect?.(leaf ? name : '', leaf ? leaf.node : null);
    }
  }

  setHeight(px: unknown): void {
    const n = typeof px === 'number' && px > 0 ? px : 520;
    this.root.style.height = `${n}px`;
  }

  /** Fill the parent's height (the side panel). */
  fillParent(): void {
    this.root.style.height = '100%';
  }

  /** Fit the whole graph in view (`readable`: not below a legible scale; then show its top). */
  fit(readable = false): void {
    const l = this.layout;
    const vw = this.viewport.clientWidth;
    const vh = this.viewport.clientHeight;
    if (!l || vw === 0 || vh === 0) {
      this.needsFit = true;
      return;
    }
    this.needsFit = false;
    const pad = 24;
    const k = Math.min(1.3, (vw - 2 * pad) / Math.max(l.width, 1), (vh - 2 * pad) / Math.max(l.height, 1));
    this.k = Math.max(readable ? MIN_READABLE : 0.03, k);
    this.tx = l.width * this.k <= vw - 2 * pad ? (vw - l.width * this.k) / 2 : pad;
    this.ty = l.height * this.k <= vh - 2 * pad ? (vh - l.height * this.k) / 2 : pad;
    this.applyTransform();
  }

  dispose(): void {
    this.disposed = true;
    this.token++;
    this.resizeObserver?.disconnect();
    window.clearTimeout(this.highlightTimer);
    window.clearTimeout(this.searchTimer);
    this.root.remove();
  }

  /** An op of the graph or a copy node drawn (something a stepper can run to). */
  private isOp(name: string): boolean {
    return this.h.leaves.has(name) || this.copyLayout.byName.has(name);
  }

  /** The box standing for an op (or a copy node, or a group key) in the current layout. */
  private boxFor(name: string): Visible | undefined {
    const leaf = this.h.leaves.get(name);
    if (leaf) {
      return this.vis ? this.vis.repOf(leaf) : undefined;
    }
    return this.keyToBox.get(name) ?? this.copyLayout.boxOf.get(name);
  }

  /**
   * Fold the copy nodes of the run (and of the stepper's plan) into `copies`;
   * true when the set to lay out changed. Copies stay over runs (runs of
   * different plans would otherwise relayout each time) and are dimmed when
   * the run shown did not use them; a run wholly on the CPU clears them.
   */
  private updateCopies(): boolean {
    const run = this.overlay.run;
    const st = this.overlay.stepper;
    const lists = st.active ? [run.copies, st.copies] : [run.copies];
    let changed = false;
    const cpuOnly = run.seq > 0 && run.copies.length === 0 && isEmpty(run.placement);
    if (cpuOnly && !(st.active && st.copies.length > 0) && this.copies.size > 0) {
      this.copies.clear();
      changed = true;
    }
    if (this.copies.size + run.copies.length > MAX_COPIES) {
      this.copies.clear();
      changed = true;
    }
    for (const list of lists) {
      for (const c of list) {
        const old = this.copies.get(c.name);
        const merged = old ? mergeCopy(old, c) : c;
        if (merged) {
          this.copies.set(c.name, merged);
          changed = true;
        }
      }
    }
    if (!changed) {
      return false;
    }
    const sig = copySignature(this.copies.values());
    if (sig === this.copySig) {
      return false;
    }
    this.copySig = sig;
    return true;
  }

  // ------------------------------------------------------------- layout
  private expansion: Expansion = {
    isExpanded: (g: Group) => {
      const user = this.expanded.get(g.key);
      if (user !== undefined) {
        return user;
      }
      return this.h.root.opCount <= SMALL_GRAPH || this.autoOpen.has(g.key);
    },
    limit: (g: Group) => this.limits.get(g.key) ?? PAGE
  };

  private requestLayout(anchor: Anchor | null = null): void {
    const token = ++this.token;
    if (anchor) {
      this.pendingAnchor = anchor;
    }
    const t0 = performance.now();
    window.setTimeout(() => {
      getViz().then(
        viz => {
          if (token === this.token && !this.disposed) {
            this.doLayout(viz, t0);
          }
        },
        err => this.showMessage(`Could not load the layout engine: ${String(err)}`)
      );
    }, 0);
  }

  private doLayout(viz: Awaited<ReturnType<typeof getViz>>, t0: number): void {
    const tStart = performance.now();
    const vis = new VisibleGraph(this.h, this.expansion);
    const copies = this.copies.size > 0 ? layoutCopies(vis, this.copies.values()) : EMPTY_COPIES;
    const edges = visibleEdges(vis, copies.diverted);
    for (const e of copies.edges) {
      e.id = `e${edges.length}`;
      edges.push(e);
    }
    const input: LayoutInput = {
      boxes: copies.boxes.length > 0 ? [...vis.boxes, ...copies.boxes] : vis.boxes,
      clusters: vis.clusters
    };
    const tVis = performance.now();
    let layout: Layout | null = null;
    if (vis.boxes.length > 0) {
      const dot = toDot(input, edges, sizeOf, clusterTitleWidth);
      const result = viz.render(dot, { format: 'json0', yInvert: true });
      if (result.status !== 'success' || !result.output) {
        const why = result.errors.map(e => e.message).join('; ');
        this.showMessage(`Layout failed: ${why}`);
        return;
      }
      layout = readLayout(input, edges, JSON.parse(result.output));
    }
    const tDot = performance.now();
    this.vis = vis;
    this.boxes = input.boxes;
    this.copyLayout = copies;
    this.edges = edges;
    this.layout = layout;
    this.draw();
    const tDraw = performance.now();
    this.root.dataset.flowbookLayoutMs = (tDraw - t0).toFixed(1);
    this.root.dataset.flowbookLayouts = String(++this.layouts);
    this.root.dataset.flowbookTiming = JSON.stringify({
      wait: Math.round(tStart - t0),
      visible: Math.round(tVis - tStart),
      dot: Math.round(tDot - tVis),
      draw: Math.round(tDraw - tDot),
      boxes: input.boxes.length,
      copies: copies.boxes.length,
      edges: edges.length
    });
    this.root.dataset.flowbookVersion = String(this.graph.version);
  }

  private draw(): void {
    const scene = this.scene;
    scene.replaceChildren();
    this.boxEls.clear();
    this.edgeEls.clear();
    this.keyToBox.clear();
    this.tooltip.hidden = true;
    const vis = this.vis;
    const l = this.layout;
    this.showMessage();
    this.updateSummary();
    if (!vis || !l) {
      this.root.dataset.flowbookNodes = '0';
      return;
    }
    const clusters = svg('g', { class: 'fb-clusters' }, scene);
    const edgeLayer = svg('g', { class: 'fb-edges' }, scene);
    const labelLayer = edges_labels(this.edges.length, scene);
    const headLayer = svg('g', { class: 'fb-cluster-heads' }, scene);
    const nodeLayer = svg('g', { class: 'fb-nodes' }, scene);
    const bands: ClusterBox[] = [];
    for (const g of vis.clusters) {
      const b = l.clusters.get(g);
      if (b) {
        drawCluster(g, b, this.h.ancestors(g).length - 1, clusters, headLayer);
        bands.push(b);
      }
    }
    const covered = (p: Point) =>
      bands.some(b => p.x >= b.x1 - 2 && p.x <= b.x2 + 30 && p.y >= b.y1 - 2 && p.y <= b.y1 + CLUSTER_HEAD_H + 2);
    for (const e of this.edges) {
      const route = l.edges.get(e);
      if (route) {
        this.edgeEls.set(e, drawEdge(e, route, edgeLayer, labelLayer, covered));
      }
    }
    for (const b of this.boxes) {
      const p = l.boxes.get(b);
      if (!p) {
        continue;
      }
      const el = drawBox(b, p, nodeLayer);
      el.querySelector('.fb-hatch')?.setAttribute('fill', `url(#${this.hatchId})`);
      this.boxEls.set(b, el);
      this.keyToBox.set(b.key, b);
    }
    this.root.dataset.flowbookNodes = String(this.boxEls.size);
    this.applyOverlay();
    if (this.selected) {
      const sel = this.keyToBox.get(this.selected) ?? this.copyLayout.boxOf.get(this.selected);
      if (sel) {
        this.boxEls.get(sel)?.classList.add('fb-selected');
      }
    }
    this.markMatches();
    // where to look: keep the clicked group in place, focus a target, or fit
    const anchor = this.pendingAnchor;
    this.pendingAnchor = null;
    const focus = this.pendingFocus;
    this.pendingFocus = null;
    if (this.needsFit) {
      this.fit(true);
    } else if (anchor && this.keepAnchor(anchor)) {
      // done
    } else {
      this.applyTransform();
    }
    if (focus) {
      this.centerOn(focus);
    }
  }

  private keepAnchor(a: Anchor): boolean {
    const l = this.layout!;
    let x: number | null = null;
    let y: number | null = null;
    const box = this.keyToBox.get(a.key);
    if (box) {
      const p = l.boxes.get(box)!;
      x = p.x;
      y = p.y - p.h / 2;
    } else {
      const g = this.h.groups.get(a.key);
      const b = g ? l.clusters.get(g) : undefined;
      if (b) {
        x = (b.x1 + b.x2) / 2;
        y = b.y1;
      }
    }
    if (x === null || y === null) {
      return false;
    }
    this.tx = a.sx - x * this.k;
    this.ty = a.sy - y * this.k;
    this.applyTransform();
    return true;
  }

  private anchorFor(key: string): Anchor | null {
    const box = this.keyToBox.get(key);
    const p = box ? this.layout?.boxes.get(box) : undefined;
    if (p) {
      return { key, sx: this.tx + p.x * this.k, sy: this.ty + (p.y - p.h / 2) * this.k };
    }
    const g = this.h.groups.get(key);
    const b = g ? this.layout?.clusters.get(g) : undefined;
    if (b) {
      return { key, sx: this.tx + ((b.x1 + b.x2) / 2) * this.k, sy: this.ty + b.y1 * this.k };
    }
    return null;
  }

  private applyTransform(): void {
    this.scene.setAttribute('transform', `translate(${this.tx.toFixed(1)},${this.ty.toFixed(1)}) scale(${this.k.toFixed(4)})`);
  }

  /** Center the box standing for an op or group; zoom in if the view is far out. */
  private centerOn(key: string): void {
    const box = this.boxFor(key);
    const p = box && this.layout?.boxes.get(box);
    if (!p) {
      return;
    }
    this.k = Math.max(this.k, 0.8);
    this.tx = this.viewport.clientWidth / 2 - p.x * this.k;
    this.ty = this.viewport.clientHeight / 2 - p.y * this.k;
    this.applyTransform();
  }

  private focusIfOffscreen(name: string): void {
    const box = this.boxFor(name);
    const p = box && this.layout?.boxes.get(box);
    if (!p) {
      return;
    }
    const sx = this.tx + p.x * this.k;
    const sy = this.ty + p.y * this.k;
    const vw = this.viewport.clientWidth;
    const vh = this.viewport.clientHeight;
    if (sx < 20 || sy < 20 || sx > vw - 20 || sy > vh - 20) {
      this.centerOn(name);
    }
  }

  // ------------------------------------------------------------- overlay
  private leavesOf = (v: Visible): Leaf[] => {
    if (v.type === 'leaf') {
      return v.members ?? [v];
    }
    if (v.type === 'group') {
      return v.leaves;
    }
    const out: Leaf[] = [];
    const lim = this.expansion.limit(v.parent);
    v.parent.children.forEach((c, i) => {
      if (i >= lim) {
        if (c.type === 'leaf') {
          out.push(c);
        } else {
          out.push(...c.leaves);
        }
      }
    });
    return out;
  };

  private applyOverlay(): void {
    if (!this.vis) {
      this.updateSummary();
      return;
    }
    const ov = this.overlay;
    const states = new Map<Visible, BoxState>();
    let maxTime = 0;
    for (const [v] of this.boxEls) {
      const st = ov.box(v, this.leavesOf);
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
      setFlag(el, 'fb-stale', st.stale);
      if (st.dim) {
        dimmed.add(v);
      }
      if (st.step) {
        el.setAttribute('data-step', st.step);
      } else {
        el.removeAttribute('data-step');
      }
      this.badges(el, v, st, maxTime);
    }
    for (const [e, el] of this.edgeEls) {
      setFlag(el, 'fb-dim', dimmed.has(e.from) || dimmed.has(e.to));
    }
    this.legendHeat.hidden = maxTime <= 0;
    this.legendMax.textContent = maxTime > 0 ? formatTime(maxTime) : '';
    this.updateDeviceLegend();
    this.legend.hidden = maxTime <= 0 && this.legendDevices.hidden;
    this.updateSummary();
    if (this.selected && !this.details.hidden) {
      this.renderDetails();
    }
  }

  /** Time badge, heat strip, device badge, stale badge and error text of one box. */
  private badges(el: SVGGElement, v: Visible, st: BoxState, maxTime: number): void {
    const p = this.layout?.boxes.get(v);
    if (!p) {
      return;
    }
    const heat = el.querySelector('.fb-heat');
    let badge = el.querySelector<SVGGElement>('.fb-time-badge');
    if (st.timeUs !== null && maxTime > 0) {
      heat?.setAttribute('fill', heatColor(st.timeUs / maxTime));
      heat?.classList.add('fb-on');
      const text = formatTime(st.timeUs);
      if (!badge) {
        badge = svg('g', { class: 'fb-time-badge' }, el);
        svg('rect', { class: 'fb-time-bg', height: 14, rx: 7 }, badge);
        svg('text', { class: 'fb-time' }, badge);
      }
      const t = badge.querySelector('text')!;
      if (t.textContent !== text) {
        t.textContent = text;
        const w = text.length * 5.6 + 10;
        const r = badge.querySelector('rect')!;
        r.setAttribute('width', w.toFixed(1));
        r.setAttribute('x', (p.w - w + 6).toFixed(1));
        r.setAttribute('y', '-8');
        t.setAttribute('x', (p.w - w / 2 + 6).toFixed(1));
        t.setAttribute('y', '2.5');
      }
    } else {
      heat?.classList.remove('fb-on');
      badge?.remove();
      badge = null;
    }
    const timeLeft = badge ? Number(badge.querySelector('rect')!.getAttribute('x')) : Infinity;
    // where it ran; a copy node says it in its label
    const devEnd = this.deviceBadge(el, v.type === 'leaf' && v.copy ? '' : st.device, p, timeLeft);
    let stale = el.querySelector('.fb-stale-badge');
    if (st.stale && !stale) {
      stale = svg('g', { class: 'fb-stale-badge' }, el);
      svg('rect', { x: -6, y: -8, width: 34, height: 14, rx: 7 }, stale);
      svg('text', { x: 11, y: 2.5 }, stale).textContent = 'stale';
    } else if (!st.stale && stale) {
      stale.remove();
    }
    if (stale) {
      stale.setAttribute('transform', devEnd !== null ? `translate(${(devEnd + 8).toFixed(1)},0)` : '');
    }
    let err = el.querySelector('.fb-errmsg');
    if (st.errorMessage) {
      if (!err) {
        err = svg('text', { class: 'fb-errmsg', x: p.w / 2, y: p.h + 13 }, el);
      }
      err.textContent = clip(st.errorMessage, 48);
    } else if (err) {
      err.remove();
    }
  }

  /**
   * The device badge of a box: a strip down its left side and a pill at its
   * top left naming the device, both in the device's colour (the legend
   * names the colours). A box too narrow for the pill beside its time badge
   * keeps the strip only. Returns where the pill ends, or null without one.
   */
  private deviceBadge(el: SVGGElement, device: string, p: { w: number; h: number }, timeLeft: number): number | null {
    let dev = el.querySelector<SVGGElement>('.fb-device-badge');
    if (!device) {
      if (dev) {
        dev.remove();
        el.removeAttribute('data-device');
      }
      return null;
    }
    if (!dev) {
      dev = svg('g', { class: 'fb-device-badge' }, el);
      svg('rect', { class: 'fb-device-strip', x: 0, y: 3, width: 3, height: Math.max(0, p.h - 6), rx: 1.5 }, dev);
      const pill = svg('g', { class: 'fb-device-pill' }, dev);
      svg('rect', { y: -8, height: 14, rx: 7 }, pill);
      svg('text', { y: 2.5 }, pill);
    }
    const w = textWidth(device, 9.5) + 12;
    const x = -6;
    const fits = x + w + 2 <= timeLeft;
    dev.querySelector<SVGGElement>('.fb-device-pill')!.style.display = fits ? '' : 'none';
    if (dev.dataset.device !== device) {
      dev.dataset.device = device;
      const colour = deviceColor(device);
      dev.querySelector('.fb-device-strip')!.setAttribute('fill', colour);
      const bg = dev.querySelector('.fb-device-pill rect')!;
      bg.setAttribute('fill', colour);
      bg.setAttribute('x', x.toFixed(1));
      bg.setAttribute('width', w.toFixed(1));
      const t = dev.querySelector('.fb-device-pill text')!;
      t.setAttribute('x', (x + w / 2).toFixed(1));
      t.textContent = device;
      el.setAttribute('data-device', device);
    }
    return fits ? x + w : null;
  }

  /** The devices of the run shown, each on its colour (once per placement received). */
  private updateDeviceLegend(): void {
    const placement = this.overlay.placement;
    if (placement === this.legendPlacement) {
      return;
    }
    this.legendPlacement = placement;
    const seen = new Set<string>();
    for (const name in placement) {
      seen.add(placement[name]);
    }
    const devices = [...seen].sort((a, b) => (a.startsWith('CPU') ? -1 : b.startsWith('CPU') ? 1 : a < b ? -1 : 1));
    const box = this.legendDevices;
    box.replaceChildren();
    box.hidden = devices.length === 0;
    if (devices.length > 0) {
      html('span', 'fb-legend-title', box, 'ran on');
      for (const d of devices) {
        html('span', 'fb-device-chip', box, d).style.background = deviceColor(d);
      }
      html('span', 'fb-legend-copy', box, 'copy');
    }
  }

  private updateSummary(): void {
    const n = this.h.root.opCount;
    const r = this.overlay.run;
    let s = `${n} op${n === 1 ? '' : 's'}`;
    if (r.seq > 0) {
      s += ` \u00B7 run ${r.seq}: ${r.phase}`;
      if (r.phase === 'running') {
        s += ` (${r.done.length}/${r.pruned.length || '?'})`;
      } else if (r.total_us > 0) {
        s += ` in ${formatTime(r.total_us)}`;
      }
      const c = r.copies.length;
      if (c > 0) {
        s += ` \u00B7 ${c} cop${c === 1 ? 'y' : 'ies'} between devices`;
      }
    }
    this.summary.textContent = s;
    this.summary.dataset.phase = r.phase;
  }

  private updateStepBar(st: StepperState): void {
    this.stepBar.hidden = !st.active;
    this.stepMessage.textContent = st.message;
    this.runToButton.disabled = !this.isOp(this.selected);
  }

  /** Open the scopes hiding the stepper's current op; true if anything opened. */
  private revealStepCurrent(): boolean {
    const st = this.overlay.stepper;
    return st.active && st.current ? this.reveal(st.current) : false;
  }

  /**
   * Open every group hiding an op (and page it into view); true if anything changed.
   * A copy node is revealed with the op whose value it copies (a copy inside a collapsed
   * scope is drawn once that scope is open).
   */
  private reveal(name: string): boolean {
    const copy = this.copies.get(name);
    const leaf = this.h.leaves.get(copy ? copy.src : name);
    if (!leaf) {
      return false;
    }
    let changed = false;
    for (const g of this.h.ancestors(leaf)) {
      if (!this.expansion.isExpanded(g)) {
        this.expanded.set(g.key, true);
        changed = true;
      }
    }
    for (let x: Leaf | Group = leaf; x.parent; x = x.parent) {
      const lim = this.expansion.limit(x.parent);
      if (x.index >= lim) {
        this.limits.set(x.parent.key, Math.ceil((x.index + 1) / PAGE) * PAGE);
        changed = true;
      }
    }
    return changed;
  }

  // ------------------------------------------------------------- actions
  private act(action: StepAction): void {
    const node = action === 'run_to' && this.isOp(this.selected) ? this.selected : null;
    this.cb.onAction?.(action, node);
  }

  private toggle(v: Visible): void {
    if (v.type === 'more') {
      const g = v.parent;
      this.limits.set(g.key, this.expansion.limit(g) + PAGE);
      this.requestLayout(this.anchorFor(v.key) && { ...this.anchorFor(v.key)!, key: v.key });
      return;
    }
    if (v.type === 'group') {
      const open = !this.expansion.isExpanded(v);
      this.expanded.set(v.key, open);
      this.requestLayout(this.anchorFor(v.key));
    }
  }

  private collapseAll(): void {
    for (const key of this.h.groups.keys()) {
      this.expanded.set(key, false);
    }
    this.needsFit = true;
    this.requestLayout();
  }

  private lastQuery = '';

  private runSearch(): void {
    const q = this.search.value.trim().toLowerCase();
    this.lastQuery = this.search.value;
    this.matches = [];
    this.matchIndex = -1;
    if (q) {
      for (const l of this.h.leaves.values()) {
        if (l.key.toLowerCase().includes(q)) {
          this.matches.push(l.key);
        }
      }
      for (const name of this.copies.keys()) {
        if (name.toLowerCase().includes(q)) {
          this.matches.push(name);
        }
      }
    }
    let changed = false;
    for (const m of this.matches.slice(0, MAX_REVEAL)) {
      changed = this.reveal(m) || changed;
    }
    this.searchCount.textContent = q ? `${this.matches.length ? 1 : 0}/${this.matches.length}` : '';
    if (this.matches.length > 0) {
      this.matchIndex = 0;
      this.pendingFocus = this.matches[0];
    }
    if (changed) {
      this.requestLayout();
    } else {
      this.markMatches();
      if (this.pendingFocus) {
        this.centerOn(this.pendingFocus);
        this.pendingFocus = null;
      }
    }
  }

  private nextMatch(step: number): void {
    if (this.matches.length === 0) {
      return;
    }
    this.matchIndex = (this.matchIndex + step + this.matches.length) % this.matches.length;
    const m = this.matches[this.matchIndex];
    this.searchCount.textContent = `${this.matchIndex + 1}/${this.matches.length}`;
    if (this.reveal(m)) {
      this.pendingFocus = m;
      this.requestLayout();
    } else {
      this.markMatches();
      this.centerOn(m);
    }
  }

  private markMatches(): void {
    for (const el of this.scene.querySelectorAll('.fb-match, .fb-match-current')) {
      el.classList.remove('fb-match', 'fb-match-current');
    }
    if (!this.vis) {
      return;
    }
    this.matches.forEach((m, i) => {
      const box = this.boxFor(m);
      const el = box && this.boxEls.get(box);
      el?.classList.add(i === this.matchIndex ? 'fb-match-current' : 'fb-match');
    });
  }

  private renderDetails(): void {
    const pane = this.details;
    pane.replaceChildren();
    const name = this.selected;
    const leaf = this.h.leaves.get(name);
    const group = leaf ? undefined : this.h.groups.get(name);
    const copy = leaf || group ? undefined : this.copyLayout.byName.get(name) ?? this.copyBox(name);
    if (!leaf && !group && !copy) {
      pane.hidden = true;
      return;
    }
    pane.hidden = false;
    const close = html('button', 'fb-details-close', pane, '\u00D7');
    close.title = 'Close';
    close.addEventListener('click', () => this.select(''));
    if (leaf) {
      leafDetails(pane, leaf, this.h, this.overlay, n => this.goTo(n));
    } else if (group) {
      groupDetails(pane, group, this.overlay);
    } else if (copy) {
      copyDetails(pane, copy, this.h, this.overlay, n => this.goTo(n));
    }
  }

  /** A drawn box standing for several copies, by its key. */
  private copyBox(key: string): Leaf | undefined {
    const v = this.keyToBox.get(key);
    return v && v.type === 'leaf' && v.copy ? v : undefined;
  }

  /** Select an op and bring it into view, opening what hides it. */
  goTo(name: string): void {
    this.select(name);
    if (this.reveal(name)) {
      this.pendingFocus = name;
      this.requestLayout();
    } else {
      this.centerOn(name);
    }
  }

  // ------------------------------------------------------- pan and zoom
  private installPointer(): void {
    const svgEl = this.svgEl;
    let down: { x: number; y: number; tx: number; ty: number; id: number } | null = null;
    let moved = false;
    svgEl.addEventListener('pointerdown', ev => {
      if (ev.button !== 0) {
        return;
      }
      down = { x: ev.clientX, y: ev.clientY, tx: this.tx, ty: this.ty, id: ev.pointerId };
      moved = false;
    });
    svgEl.addEventListener('pointermove', ev => {
      if (down && ev.pointerId === down.id) {
        const dx = ev.clientX - down.x;
        const dy = ev.clientY - down.y;
        if (!moved && Math.hypot(dx, dy) > 4) {
          moved = true;
          svgEl.setPointerCapture(ev.pointerId);
          svgEl.classList.add('fb-dragging');
          this.tooltip.hidden = true;
        }
        if (moved) {
          this.tx = down.tx + dx;
          this.ty = down.ty + dy;
          this.applyTransform();
        }
        return;
      }
      this.hover(ev);
    });
    const up = (ev: PointerEvent) => {
      if (!down || ev.pointerId !== down.id) {
        return;
      }
      const wasMoved = moved;
      down = null;
      moved = false;
      svgEl.classList.remove('fb-dragging');
      if (svgEl.hasPointerCapture(ev.pointerId)) {
        svgEl.releasePointerCapture(ev.pointerId);
      }
      if (!wasMoved && ev.type === 'pointerup') {
        this.click(ev.target as Element);
      }
    };
    svgEl.addEventListener('pointerup', up);
    svgEl.addEventListener('pointercancel', up);
    svgEl.addEventListener('pointerleave', () => {
      this.tooltip.hidden = true;
    });
    svgEl.addEventListener(
      'wheel',
      ev => {
        ev.preventDefault();
        const r = svgEl.getBoundingClientRect();
        const mx = ev.clientX - r.left;
        const my = ev.clientY - r.top;
        const scale = ev.deltaMode === 1 ? 0.05 : 0.0015;
        const f = Math.exp(-ev.deltaY * scale);
        const k = Math.max(0.03, Math.min(4, this.k * f));
        this.tx = mx - ((mx - this.tx) * k) / this.k;
        this.ty = my - ((my - this.ty) * k) / this.k;
        this.k = k;
        this.needsFit = false;
        this.applyTransform();
      },
      { passive: false }
    );
  }

  private click(target: Element): void {
    const head = target.closest('.fb-cluster-head');
    if (head) {
      const key = head.getAttribute('data-name') ?? '';
      const g = this.h.groups.get(key);
      if (g) {
        this.expanded.set(key, false);
        const a = this.anchorFor(key);
        this.requestLayout(a);
      }
      return;
    }
    const nodeEl = target.closest('.fb-node');
    if (!nodeEl) {
      if (this.selected) {
        this.select('');
      }
      return;
    }
    const v = this.keyToBox.get(nodeEl.getAttribute('data-name') ?? '');
    if (!v) {
      return;
    }
    if (v.type === 'leaf') {
      this.select(v.key);
    } else {
      this.toggle(v);
    }
  }

  private hover(ev: PointerEvent): void {
    const nodeEl = (ev.target as Element).closest?.('.fb-node');
    const v = nodeEl ? this.keyToBox.get(nodeEl.getAttribute('data-name') ?? '') : undefined;
    const tip = this.tooltip;
    if (!v) {
      tip.hidden = true;
      return;
    }
    if (tip.hidden || tip.dataset.key !== v.key) {
      tooltipContent(tip, v, this.overlay);
      tip.dataset.key = v.key;
      tip.hidden = false;
    }
    const r = this.viewport.getBoundingClientRect();
    let x = ev.clientX - r.left + 14;
    let y = ev.clientY - r.top + 16;
    const w = tip.offsetWidth;
    const hgt = tip.offsetHeight;
    if (x + w > r.width - 4) {
      x = Math.max(4, ev.clientX - r.left - w - 10);
    }
    if (y + hgt > r.height - 4) {
      y = Math.max(4, ev.clientY - r.top - hgt - 10);
    }
    tip.style.left = `${x}px`;
    tip.style.top = `${y}px`;
  }

  private showMessage(text?: string): void {
    const m = this.message;
    if (text) {
      m.textContent = text;
      m.hidden = false;
    } else if (this.h.root.opCount === 0) {
      m.replaceChildren();
      html('div', 'fb-message-title', m, 'No ops yet \u2014 build some in a cell');
      html('div', 'fb-message-sub', m, 'e.g.  a = fb.constant(2.0);  b = a * 3');
      m.hidden = false;
    } else {
      m.hidden = true;
    }
  }

  /** Briefly highlight the box of an op (used after jumping to it from elsewhere). */
  flash(name: string): void {
    const box = this.boxFor(name);
    const el = box && this.boxEls.get(box);
    if (el) {
      el.classList.add('fb-flash');
      window.clearTimeout(this.highlightTimer);
      this.highlightTimer = window.setTimeout(() => el.classList.remove('fb-flash'), 1500);
    }
  }
}

function setFlag(el: Element, cls: string, on: boolean): void {
  if (on) {
    el.classList.add(cls);
  } else {
    el.classList.remove(cls);
  }
}

function isEmpty(o: Record<string, unknown>): boolean {
  for (const _ in o) {
    return false;
  }
  return true;
}

function edges_labels(count: number, scene: SVGGElement): SVGGElement | null {
  return count <= 400 ? svg('g', { class: 'fb-edge-labels' }, scene) : null;
}

/**
 * GraphView: the graph as the notebook widget and the side panel show it.
 *
 * State it owns:
 * - `graph`, `overlay` (run + stepper): the last state the host sent
 * - `h`: the name-scope hierarchy of `graph`, rebuilt when the graph changes
 * - `expanded`, `limits`: what the user opened, by group key (op names are
 *   stable across cell re-runs, so this survives graph updates)
 * - `vis`, `layout`, `boxEls`: what is on screen now; `camera` (camera.ts):
 *   where it sits in the viewport, and panning and zooming
 * - `search` (search.ts): the matches of the search box
 * - `copies`: the copy nodes of the runs shown (by name, readers merged over
 *   runs), laid out beside the graph's boxes (copies.ts); a run relayouts
 *   only when it brings a new copy (a CPU-only run clears them)
 *
 * The loop: setGraph / a click that opens a group -> requestLayout() ->
 * (next tick, latest request wins) visible part -> DOT -> Graphviz -> SVG
 * -> applyOverlay(). Run and stepper updates only call applyOverlay(),
 * which changes attributes on the boxes already drawn (badges.ts); no layout.
 */

import { PAGE, Hierarchy, VisibleGraph, type Expansion, type Group, type Leaf, type Visible } from './hierarchy';
import { readLayout, toDot, visibleEdges, type ClusterBox, type Edge, type Layout, type LayoutInput, type Point } from './layout';
import { CLUSTER_HEAD_H, clusterTitleWidth, drawBox, drawCluster, drawEdge, html, sizeOf, svg } from './draw';
import { Overlay, formatTime, type BoxState } from './overlay';
import { Legend, drawBadges } from './badges';
import { Camera } from './camera';
import { Search } from './search';
import { StepBar } from './stepbar';
import { showDetails, tooltipContent } from './details';
import { CopySet, EMPTY_COPIES, layoutCopies, type CopyLayout } from './copies';
import { getViz } from './viz';
import {
  EMPTY_RUN,
  EMPTY_STEPPER,
  normalizeGraph,
  normalizeRun,
  normalizeStepper,
  type GraphState,
  type StepAction,
  type StepperState,
  type ViewCallbacks
} from './types';

export const SMALL_GRAPH = 60; // graphs with at most this many ops start fully expanded

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
  private readonly search: Search;
  private readonly summary: HTMLSpanElement;
  private readonly stepBar: StepBar;
  private readonly viewport: HTMLDivElement;
  private readonly svgEl: SVGSVGElement;
  private readonly scene: SVGGElement;
  private readonly details: HTMLDivElement;
  private readonly tooltip: HTMLDivElement;
  private readonly legend: Legend;
  private readonly camera: Camera;
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
  private readonly copies = new CopySet(); // the copy nodes of the runs shown (copies.ts)
  private copyLayout: CopyLayout = EMPTY_COPIES;
  private boxEls = new Map<Visible, SVGGElement>();
  private edgeEls = new Map<Edge, SVGGElement>();
  private keyToBox = new Map<string, Visible>();
  private selected = ''; // op name or group key shown in the details pane
  private token = 0; // the newest layout request
  private layouts = 0; // layouts done (data-flowbook-layouts: tests check runs do not relayout)
  private pendingAnchor: Anchor | null = null;
  private pendingFocus: string | null = null;
  private lastStepCurrent: string | null = null;
  private highlightTimer = 0;
  private disposed = false;

  constructor(parent: HTMLElement, callbacks: ViewCallbacks = {}) {
    this.cb = callbacks;
    const root = (this.root = html('div', 'flowbook-graph', parent));
    root.tabIndex = -1;
    root.dataset.flowbookNodes = '0';
    root.dataset.flowbookVersion = '-1';

    // toolbar: search, fit, collapse, summary
    const bar = html('div', 'fb-toolbar', root);
    this.search = new Search(bar, {
      names: () => this.searchable(),
      reveal: name => this.reveal(name),
      relayoutTo: name => {
        this.pendingFocus = name;
        this.requestLayout();
      },
      centerOn: name => this.centerOn(name),
      markMatches: () => this.markMatches()
    });
    const fit = html('button', 'fb-button fb-fit', bar, 'Fit');
    fit.title = 'Fit the whole graph in view';
    const collapse = html('button', 'fb-button fb-collapse-all', bar, 'Collapse all');
    collapse.title = 'Collapse every name scope';
    this.summary = html('span', 'fb-summary', bar);

    this.stepBar = new StepBar(root, action => this.act(action));

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
    this.legend = new Legend(vp);
    this.camera = new Camera(this.svgEl, this.scene, vp);

    fit.addEventListener('click', () => this.fit());
    collapse.addEventListener('click', () => this.collapseAll());
    root.addEventListener('keydown', ev => {
      if (ev.key === 'Escape' && ev.target !== this.search.element) {
        this.select('');
      }
    });
    this.camera.installPointer({
      click: target => this.click(target),
      hover: ev => this.hover(ev),
      leave: () => {
        this.tooltip.hidden = true;
      }
    });
    this.resizeObserver =
      typeof ResizeObserver === 'undefined'
        ? null
        : new ResizeObserver(() => {
            if (this.camera.needsFit && this.layout && this.viewport.clientWidth > 0) {
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
      this.camera.needsFit = true;
      this.copies.clear(); // another graph: the copies seen were between its ops
      this.copies.fold(this.overlay.run, this.overlay.stepper); // those of the run it came with
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
    if (this.copies.fold(this.overlay.run, this.overlay.stepper)) {
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
    if (this.copies.fold(this.overlay.run, this.overlay.stepper)) {
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
    this.stepBar.canRunTo = this.isOp(name);
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
    if (this.layout) {
      this.camera.fit(this.layout.width, this.layout.height, readable);
    } else {
      this.camera.needsFit = true;
    }
  }

  dispose(): void {
    this.disposed = true;
    this.token++;
    this.resizeObserver?.disconnect();
    window.clearTimeout(this.highlightTimer);
    this.search.dispose();
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
    if (this.camera.needsFit) {
      this.fit(true);
    } else if (anchor && this.keepAnchor(anchor)) {
      // done
    } else {
      this.camera.apply();
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
    this.camera.pin(x, y, a.sx, a.sy);
    return true;
  }

  private anchorFor(key: string): Anchor | null {
    const box = this.keyToBox.get(key);
    const p = box ? this.layout?.boxes.get(box) : undefined;
    if (p) {
      return { key, ...this.camera.toScreen(p.x, p.y - p.h / 2) };
    }
    const g = this.h.groups.get(key);
    const b = g ? this.layout?.clusters.get(g) : undefined;
    if (b) {
      return { key, ...this.camera.toScreen((b.x1 + b.x2) / 2, b.y1) };
    }
    return null;
  }

  /** Center the box standing for an op or group; zoom in if the view is far out. */
  private centerOn(key: string): void {
    const box = this.boxFor(key);
    const p = box && this.layout?.boxes.get(box);
    if (p) {
      this.camera.centerOn(p.x, p.y);
    }
  }

  private focusIfOffscreen(name: string): void {
    const box = this.boxFor(name);
    const p = box && this.layout?.boxes.get(box);
    if (p && this.camera.isOffscreen(p.x, p.y)) {
      this.camera.centerOn(p.x, p.y);
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
      const p = this.layout?.boxes.get(v);
      if (p) {
        // where it ran; a copy node says it in its label
        drawBadges(el, p, st, maxTime, v.type === 'leaf' && v.copy ? '' : st.device);
      }
    }
    for (const [e, el] of this.edgeEls) {
      setFlag(el, 'fb-dim', dimmed.has(e.from) || dimmed.has(e.to));
    }
    this.legend.update(maxTime, ov.placement);
    this.updateSummary();
    if (this.selected && !this.details.hidden) {
      this.renderDetails();
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
    this.stepBar.update(st);
    this.stepBar.canRunTo = this.isOp(this.selected);
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
    this.camera.needsFit = true;
    this.requestLayout();
  }

  /** The names search looks through: the ops, then the copy nodes. */
  private *searchable(): Iterable<string> {
    yield* this.h.leaves.keys();
    yield* this.copies.names();
  }

  private markMatches(): void {
    for (const el of this.scene.querySelectorAll('.fb-match, .fb-match-current')) {
      el.classList.remove('fb-match', 'fb-match-current');
    }
    if (!this.vis) {
      return;
    }
    const current = this.search.index;
    this.search.matches.forEach((m, i) => {
      const box = this.boxFor(m);
      const el = box && this.boxEls.get(box);
      el?.classList.add(i === current ? 'fb-match-current' : 'fb-match');
    });
  }

  private renderDetails(): void {
    const name = this.selected;
    const subject =
      this.h.leaves.get(name) ?? this.h.groups.get(name) ?? this.copyLayout.byName.get(name) ?? this.copyBox(name);
    showDetails(this.details, subject, {
      h: this.h,
      ov: this.overlay,
      go: n => this.goTo(n),
      close: () => this.select('')
    });
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

  // ------------------------------------------------------- pointer
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

function edges_labels(count: number, scene: SVGGElement): SVGGElement | null {
  return count <= 400 ? svg('g', { class: 'fb-edge-labels' }, scene) : null;
}

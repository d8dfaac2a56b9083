/**
 * GraphView: the graph as the widget and the side panel show it; it keeps the state, wires the parts.
 *
 * State it owns:
 * - `graph`, `overlay` (run + stepper): the last state the host sent
 * - `h`: the name-scope hierarchy of `graph` as written or as optimised
 *   (`rewrites`, rewrites.ts), rebuilt when the graph or that choice changes
 * - `openings` (expansion.ts): what is open, by group key (op names are
 *   stable across cell re-runs, so this survives graph updates)
 * - `copies`: the copy nodes of the runs shown (by name, readers merged over
 *   runs), laid out beside the graph's boxes (copies.ts); a run relayouts
 *   only when it brings a new copy (a CPU-only run clears them)
 * - `frame` (frame.ts): what is laid out now, drawn by `scene`; `focus`: where the view looks
 * - `selected`: the op, copy or group in the details pane (details.ts)
 * - `presentation` (present.ts), `follower` (follow.ts: the cell whose new ops
 *   are centred), `updates` (updates.ts: the newest state shown)
 *
 * The parts: the toolbar (toolbar.ts, with search.ts), the stepper's bar
 * (stepbar.ts), the run list with replay and compare (history.ts; the runs
 * the host sends, and which is shown: run-feed.ts), the scene, the hover
 * tooltip (tooltip.ts), the details pane, the legend (badges.ts), the rewrites' toggle.
 *
 * The loop: setGraph / a click that opens a group -> requestLayout() -> (next
 * tick, latest request wins) layOut: visible part -> DOT -> Graphviz ->
 * scene.draw -> applyOverlay(). Run and stepper updates only call
 * applyOverlay() (badges, loops' counters, queues' levels: queues.ts), no layout.
 */

import type { Viz } from '@viz-js/viz';
import { Hierarchy, type Group, type Leaf, type More, type Visible } from './hierarchy';
import { html } from './draw';
import { Overlay } from './overlay';
import { Legend } from './badges';
import { Focus } from './focus';
import { Toolbar } from './toolbar';
import { StepBar } from './stepbar';
import { RunHistory, markChanged } from './history';
import { showDetails } from './details';
import { Tooltip } from './tooltip';
import { CopySet, EMPTY_COPIES, type CopyLayout } from './copies';
import { Openings } from './expansion';
import { LayoutQueue, layOut, passTiming, type Frame } from './frame';
import { Scene } from './scene';
import { Presentation } from './present';
import { Updates } from './updates';
import { RunFeed } from './run-feed';
import { CellFollower } from './follow';
import { paintRunMarks } from './queues';
import { Rewrites } from './rewrites';
import {
  EMPTY_RUN,
  EMPTY_STEPPER,
  normalizeGraph,
  normalizeStepper,
  type GraphState,
  type RunState,
  type StepAction,
  type StepperState,
  type ViewCallbacks
} from './types';

let instances = 0;

export class GraphView {
  readonly root: HTMLDivElement;
  private readonly cb: ViewCallbacks;
  private readonly toolbar: Toolbar;
  private readonly stepBar: StepBar;
  private readonly history: RunHistory;
  readonly feed: RunFeed; // the runs the host sends (ticks, the run list, messages) and the one shown
  private readonly scene: Scene;
  private readonly details: HTMLDivElement;
  private readonly tooltip: Tooltip;
  private readonly legend: Legend;
  private readonly focus: Focus;
  private readonly layoutQueue: LayoutQueue;
  private readonly rewrites: Rewrites; // as written or as optimised (rewrites.ts)

  private graph: GraphState = normalizeGraph(null);
  private overlay = new Overlay(EMPTY_RUN, EMPTY_STEPPER);
  private h = new Hierarchy([]);
  private readonly openings = new Openings();
  private readonly copies = new CopySet();
  private frame: Frame | null = null;
  private selected = ''; // op name or group key shown in the details pane
  private layouts = 0; // layouts done (data-flowbook-layouts: tests check runs do not relayout)
  private lastStepCurrent: string | null = null;
  private readonly updates = new Updates(); // the newest state shown, per kind (updates.ts)
  private readonly presentation: Presentation; // present mode (present.ts)
  private readonly follower = new CellFollower(); // the cell whose new ops are centred (follow.ts)

  constructor(parent: HTMLElement, callbacks: ViewCallbacks = {}) {
    this.cb = callbacks;
    const root = (this.root = html('div', 'flowbook-graph', parent));
    root.tabIndex = -1;
    root.dataset.flowbookNodes = '0';
    root.dataset.flowbookVersion = '-1';

    this.toolbar = new Toolbar(root, {
      names: () => this.searchable(),
      reveal: name => this.reveal(name),
      relayoutTo: name => {
        this.focus.centerNext(name);
        this.requestLayout();
      },
      centerOn: name => this.focus.centerOn(name),
      markMatches: () => this.markMatches(),
      fit: () => this.focus.fit(),
      collapseAll: () => this.collapseAll(),
      togglePresent: () => {
        this.setPresent(!this.presentation.on);
        this.cb.onPresent?.(this.presentation.on);
      }
    });
    this.stepBar = new StepBar(root, action => this.act(action));
    this.history = new RunHistory(root, {
      request: seq => this.cb.onHistory?.(seq),
      show: run => this.showRun(run ?? this.feed.live)
    });
    this.feed = new RunFeed(this.updates, this.history, run => this.showRun(run));

    // the canvas
    const vp = html('div', 'fb-viewport', root);
    this.scene = new Scene(vp, ++instances);
    this.details = html('div', 'fb-details', vp);
    this.details.hidden = true;
    this.tooltip = new Tooltip(vp);
    this.legend = new Legend(vp);
    this.focus = new Focus(vp, this.scene, {
      boxFor: name => this.boxFor(name),
      groupOf: key => this.h.groups.get(key)
    });
    this.presentation = new Presentation(root, this.toolbar, this.openings, this.focus.camera);
    this.rewrites = new Rewrites(root.querySelector('.fb-toolbar')!, vp, {
      switched: () => {
        this.h = this.rewrites.hierarchy(this.graph);
        this.openings.setHierarchy(this.h);
        this.showRun(this.feed.live);
        this.focus.fitNext();
        this.requestLayout();
      },
      reveal: n => this.reveal(n),
      goTo: n => this.goTo(n)
    });
    this.layoutQueue = new LayoutQueue(
      (viz, requestedAt) => this.doLayout(viz, requestedAt),
      err => this.showMessage(`Could not load the layout engine: ${String(err)}`)
    );

    root.addEventListener('keydown', ev => {
      if (ev.key === 'Escape' && ev.target !== this.toolbar.search.element) {
        this.select('');
      }
    });
    this.focus.camera.installPointer({
      click: target => this.click(target),
      hover: ev => this.hover(ev),
      leave: () => this.tooltip.hide()
    });
    this.showMessage();
  }

  // ------------------------------------------------------------ host API
  setGraph(g: unknown): void {
    if (!this.updates.fresh('graph', g)) {
      return;
    }
    const graph = normalizeGraph(g);
    const newId = graph.id !== this.graph.id;
    this.graph = graph;
    this.h = this.rewrites.hierarchy(graph);
    this.openings.setHierarchy(this.h);
    if (newId) {
      this.focus.fitNext();
      this.copies.clear(); // another graph: the copies seen were between its ops
      this.copies.fold(this.overlay.run, this.overlay.stepper); // those of the run it came with
    }
    this.revealStepCurrent();
    this.centerFollowed();
    this.requestLayout();
  }

  /** Turn present mode on or off: big type, the scopes' structure, fitted at scale 1 or more. */
  setPresent(on: unknown): void {
    if (this.presentation.set(on === true)) {
      this.focus.fitNext();
      this.requestLayout();
    }
  }

  /** Centre the ops the cell with model id `cellId` makes, once the kernel sends them. */
  followCell(cellId: string): void {
    this.follower.follow(cellId);
  }

  /** A whole run state from the host; ticks, the run list and messages go to `feed` (run-feed.ts). */
  setRun(r: unknown): void {
    this.feed.setRun(r);
  }

  /** A plan's rewrite from the host (`optimized`): the toggle "as written / as optimised". */
  setOptimized(d: unknown): void {
    this.rewrites.set(d);
  }

  private showRun(run: RunState): void {
    this.overlay.setRun(this.rewrites.run(run));
    if (this.copies.fold(this.overlay.run, this.overlay.stepper)) {
      this.requestLayout();
    }
    this.applyOverlay();
  }

  setStepper(s: unknown): void {
    if (!this.updates.fresh('stepper', s)) {
      return;
    }
    const st = normalizeStepper(s);
    this.overlay.setStepper(st);
    this.updateStepBar(st);
    if (st.active && st.current && st.current !== this.lastStepCurrent) {
      this.lastStepCurrent = st.current;
      if (this.revealStepCurrent()) {
        this.focus.centerNext(st.current);
        this.requestLayout();
      } else {
        this.focus.showIfOffscreen(st.current);
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
    this.markSelected();
    this.renderDetails();
    this.stepBar.canRunTo = this.isOp(name);
    if (notify) {
      // an op, a copy node, or a box standing for several copies (the host echoes it back)
      const leaf = this.h.leaves.get(name) ?? this.copyLayout.byName.get(name) ?? this.copyBox(name);
      this.cb.onSelect?.(leaf ? name : '', leaf ? leaf.node : null);
    }
  }

  /** Select an op and bring it into view, opening what hides it. */
  goTo(name: string): void {
    this.select(name);
    if (this.reveal(name)) {
      this.focus.centerNext(name);
      this.requestLayout();
    } else {
      this.focus.centerOn(name);
    }
  }

  /** Briefly highlight the box of an op (used after jumping to it from elsewhere). */
  flash(name: string): void {
    this.scene.flash(this.boxFor(name));
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
    this.focus.fit(readable);
  }

  dispose(): void {
    this.layoutQueue.dispose();
    this.history.dispose();
    this.focus.dispose();
    this.scene.dispose();
    this.toolbar.dispose();
    this.root.remove();
  }

  // ------------------------------------------------------------- lookups
  private get copyLayout(): CopyLayout {
    return this.frame?.copies ?? EMPTY_COPIES;
  }

  /** An op of the graph or a copy node drawn (something a stepper can run to). */
  private isOp(name: string): boolean {
    return this.h.leaves.has(name) || this.copyLayout.byName.has(name);
  }

  /** The box standing for an op (or a copy node, or a group key) in the current layout. */
  private boxFor(name: string): Visible | undefined {
    const leaf = this.h.leaves.get(name);
    if (leaf) {
      return this.frame ? this.frame.vis.repOf(leaf) : undefined;
    }
    return this.scene.boxOf(name) ?? this.copyLayout.boxOf.get(name);
  }

  /** A drawn box standing for several copies, by its key. */
  private copyBox(key: string): Leaf | undefined {
    const v = this.scene.boxOf(key);
    return v && v.type === 'leaf' && v.copy ? v : undefined;
  }

  /** The names search looks through: the ops, then the copy nodes. */
  private *searchable(): Iterable<string> {
    yield* this.h.leaves.keys();
    yield* this.copies.names();
  }

  // ------------------------------------------------------------- layout
  /** Lay out again (soon: the latest request wins). */
  private requestLayout(): void {
    this.layoutQueue.request();
  }

  private doLayout(viz: Viz, requestedAt: number): void {
    const pass = layOut(viz, this.h, this.openings, this.copies, this.presentation.style);
    if ('error' in pass) {
      this.showMessage(`Layout failed: ${pass.error}`);
      return;
    }
    this.frame = pass.frame;
    this.draw(pass.frame);
    const drawnAt = performance.now();
    const data = this.root.dataset;
    data.flowbookLayoutMs = (drawnAt - requestedAt).toFixed(1);
    data.flowbookLayouts = String(++this.layouts);
    data.flowbookTiming = passTiming(pass, requestedAt, drawnAt);
    data.flowbookVersion = String(this.graph.version);
  }

  private draw(frame: Frame): void {
    this.scene.draw(frame, this.h);
    this.tooltip.hide();
    this.showMessage();
    this.updateSummary();
    this.root.dataset.flowbookNodes = String(this.scene.size);
    if (!frame.layout) {
      return;
    }
    this.applyOverlay();
    if (this.selected) {
      this.markSelected();
    }
    this.markMatches();
    this.focus.drawn();
  }

  // ------------------------------------------------------------- overlay
  private applyOverlay(): void {
    if (!this.frame) {
      this.updateSummary();
      return;
    }
    const ov = this.overlay;
    const maxTime = this.scene.paint(v => ov.box(v, this.openings.leavesOf));
    paintRunMarks(this.scene.el, this.h, ov.run, n => this.boxFor(n)?.key);
    this.rewrites.paint(this.scene.el, n => this.boxFor(n)?.key);
    this.legend.update(maxTime, ov.placement);
    markChanged(this.root, this.history.changedOps, n => this.boxFor(n)?.key);
    this.updateSummary();
    if (this.selected && !this.details.hidden) {
      this.renderDetails();
    }
  }

  private updateSummary(): void {
    this.toolbar.setSummary(this.h.root.opCount, this.overlay.run);
  }

  private updateStepBar(st: StepperState): void {
    this.stepBar.update(st);
    this.stepBar.canRunTo = this.isOp(this.selected);
  }

  private markSelected(): void {
    this.scene.markSelected(this.scene.boxOf(this.selected) ?? this.copyLayout.boxOf.get(this.selected));
  }

  private markMatches(): void {
    const search = this.toolbar.search;
    this.scene.markMatches(this.frame ? search.matches.map(m => this.boxFor(m)) : [], search.index);
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

  private showMessage(text?: string): void {
    this.scene.showMessage(text, this.h.root.opCount === 0);
  }

  // ------------------------------------------------------------- opening
  /** Centre the ops of the cell followed if they changed (a few are revealed, many shown by their scopes). */
  private centerFollowed(): void {
    const ops = this.follower.newOps(this.h);
    if (ops) {
      ops.reveal.forEach(n => this.reveal(n));
      this.focus.centerNext(ops.names);
    }
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
    return leaf ? this.openings.reveal(leaf) : false;
  }

  /** Open or close a group's box; show the next page of a "more" box. */
  private toggle(v: Group | More): void {
    if (v.type === 'more') {
      this.openings.more(v.parent);
    } else if (v.type === 'group') {
      this.openings.set(v.key, !this.openings.isExpanded(v));
    }
    this.focus.hold(v.key);
    this.requestLayout();
  }

  private collapseAll(): void {
    this.openings.collapseAll();
    this.focus.fitNext();
    this.requestLayout();
  }

  // ------------------------------------------------------- pointer, buttons
  private act(action: StepAction): void {
    const node = action === 'run_to' && this.isOp(this.selected) ? this.selected : null;
    this.cb.onAction?.(action, node);
  }

  private click(target: Element): void {
    const head = target.closest('.fb-cluster-head');
    if (head) {
      const key = head.getAttribute('data-name') ?? '';
      if (this.h.groups.has(key)) {
        this.openings.set(key, false);
        this.focus.hold(key);
        this.requestLayout();
      }
      return;
    }
    if (!target.closest('.fb-node')) {
      if (this.selected) {
        this.select('');
      }
      return;
    }
    const v = this.scene.boxAt(target);
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
    const v = this.scene.boxAt(ev.target as Element);
    if (v) {
      this.tooltip.show(v, ev, this.overlay);
    } else {
      this.tooltip.hide();
    }
  }
}

/**
 * GraphView: the graph as the widget and the side panel show it. It builds
 * the parts and wires them; each part holds its own state and logic.
 *
 * The parts, top to bottom:
 * - the toolbar (toolbar.ts: search, Fit, Collapse all, Present, the summary;
 *   the rewrites' toggle joins it: features/rewrites/)
 * - the stepper's bar (features/stepper/)
 * - the run list with replay and compare, fed the runs the host sends
 *   (features/history/: run-feed.ts, history.ts)
 * - the canvas (canvas.ts: the scene, its camera and focus, the details
 *   pane, the tooltip, the legend)
 * and what they share: `shown` (shown.ts: the graph, its hierarchy, what is
 * open, the copies, the run and stepper shown, the frame laid out, the
 * selection), the present mode (features/present/) and the layout queue
 * (layout/frame.ts).
 *
 * The loop: setGraph / a click that opens a group -> requestLayout() -> (next
 * tick, latest request wins) a pass: visible part -> DOT -> Graphviz ->
 * draw -> repaint(). Run and stepper updates only call repaint() (status,
 * badges, loops' counters, queues' levels, rewrites' and compare's marks),
 * no layout.
 */

import { LayoutQueue, type Frame } from '../layout/frame';
import { html } from '../paint/dom';
import { RunFeed } from '../features/history/run-feed';
import { Presentation } from '../features/present/present';
import { Rewrites } from '../features/rewrites/rewrites';
import { StepBar } from '../features/stepper/stepbar';
import { ErrorStrip } from '../features/errors/errors';
import type { Grouping } from '../model/hierarchy';
import type { NodeSpec } from '../protocol/graph';
import type { RunState } from '../protocol/run';
import type { StepAction } from '../protocol/stepper';
import { Canvas } from './canvas';
import { Shown } from './shown';
import { Toolbar } from './toolbar';

/** What the view calls back into its host (the widget model or the panel's comm). */
export interface ViewCallbacks {
  /** An op was clicked ("" when the selection is cleared). */
  onSelect?: (name: string, node: NodeSpec | null) => void;
  /** A stepper button was pressed; `node` is the selected op for "run_to". */
  onAction?: (action: StepAction, node: string | null) => void;
  /** Present mode was turned on or off with the toolbar's button. */
  onPresent?: (on: boolean) => void;
  /** The run list needs kept run `seq` (the host answers with `receive({history_run})`). */
  onHistory?: (seq: number) => void;
}

let instances = 0;

export class GraphView {
  readonly root: HTMLDivElement;
  readonly feed: RunFeed; // the runs the host sends (ticks, the run list, messages) and the one shown
  private readonly cb: ViewCallbacks;
  private readonly shown: Shown;
  private readonly toolbar: Toolbar;
  private readonly stepBar: StepBar;
  private readonly canvas: Canvas;
  private readonly presentation: Presentation;
  private readonly rewrites: Rewrites; // as written or as optimised
  private readonly errors: ErrorStrip; // a failed run's error, beside the graph
  private readonly layouts: LayoutQueue;

  constructor(parent: HTMLElement, callbacks: ViewCallbacks = {}) {
    this.cb = callbacks;
    const root = (this.root = html('div', 'flowbook-graph', parent));
    root.tabIndex = -1;
    root.dataset.flowbookNodes = '0';
    root.dataset.flowbookVersion = '-1';
    const shown = (this.shown = new Shown(
      (g, grouping) => this.rewrites.hierarchy(g, grouping),
      key => this.canvas.scene.boxOf(key)
    ));

    this.toolbar = new Toolbar(root, {
      names: () => shown.searchable(),
      reveal: name => shown.reveal(name),
      relayoutTo: name => this.relayoutTo(name),
      centerOn: name => this.canvas.focus.centerOn(name),
      markMatches: () => this.markMatches(),
      fit: () => this.canvas.focus.fit(),
      collapseAll: () => {
        shown.openings.collapseAll();
        this.refit();
      },
      togglePresent: () => {
        this.setPresent(!this.presentation.on);
        this.cb.onPresent?.(this.presentation.on);
      }
    });
    this.stepBar = new StepBar(root, action =>
      this.cb.onAction?.(action, action === 'run_to' && shown.isOp(shown.selected) ? shown.selected : null)
    );
    this.feed = new RunFeed(root, shown.updates, {
      request: seq => this.cb.onHistory?.(seq),
      show: run => this.showRun(run)
    });
    this.canvas = new Canvas(root, ++instances, shown, {
      select: name => this.select(name),
      goTo: name => this.goTo(name),
      relayout: () => this.requestLayout(),
      foldToFit: () => this.foldToFit()
    });
    this.presentation = new Presentation(root, this.toolbar, shown.openings, this.canvas.focus.camera);
    this.rewrites = new Rewrites(root.querySelector('.fb-toolbar')!, this.canvas.viewport, {
      switched: () => {
        shown.rebuild();
        this.showRun(this.feed.live);
        this.refit();
      },
      reveal: n => shown.reveal(n),
      goTo: n => this.goTo(n)
    });
    this.toolbar.addItem(this.rewrites.toggleElement);
    this.errors = new ErrorStrip(this.canvas.viewport, n => this.goTo(n));
    this.layouts = new LayoutQueue(
      root,
      () => shown.layoutRequest(this.presentation.style),
      frame => this.draw(frame),
      message => this.canvas.showMessage(message)
    );

    root.addEventListener('keydown', ev => {
      if (ev.key === 'Escape' && ev.target !== this.toolbar.search.element) {
        this.select('');
      }
    });
    this.canvas.showMessage();
  }

  // ------------------------------------------------------------ host API
  setGraph(g: unknown): void {
    const change = this.shown.setGraph(g);
    if (change === 'stale') {
      return;
    }
    if (change === 'another') {
      this.canvas.focus.fitNext();
      this.unfold();
    }
    this.shown.revealStepCurrent();
    this.canvas.focus.centerFollowed(this.shown.h, names => this.shown.revealFollowed(names));
    this.requestLayout();
  }

  /** Turn present mode on or off: big type, the scopes' structure, fitted at scale 1 or more. */
  setPresent(on: unknown): void {
    if (this.presentation.set(on === true)) {
      this.unfold();
      this.refit();
    }
  }

  /** Whether present mode is on. */
  get present(): boolean {
    return this.presentation.on;
  }

  /** Centre the ops the cell with model id `cellId` makes, once the kernel sends them. */
  followCell(cellId: string): void {
    this.canvas.focus.followCell(cellId);
  }

  /** A whole run state from the host; ticks, the run list and messages go to `feed` (run-feed.ts). */
  setRun(r: unknown): void {
    this.feed.setRun(r);
  }

  /** A plan's rewrite from the host (`optimized`): the toggle "as written / as optimised". */
  setOptimized(d: unknown): void {
    this.rewrites.set(d);
    this.toolbar.requestReflow(); // its toggle may have come or gone
  }

  setStepper(s: unknown): void {
    const st = this.shown.setStepper(s);
    if (!st) {
      return;
    }
    const moved = this.stepBar.update(st);
    this.stepBar.canRunTo = this.shown.isOp(this.shown.selected);
    if (moved !== null) {
      if (this.shown.reveal(moved)) {
        this.relayoutTo(moved);
      } else {
        this.canvas.focus.showIfOffscreen(moved);
      }
    }
    if (this.shown.foldCopies()) {
      this.requestLayout();
    }
    this.repaint();
  }

  /** Select an op or group by name, as if clicked (and tell the host when `notify`). */
  select(name: string, notify = true): void {
    this.shown.selected = name;
    this.canvas.showSelected();
    this.stepBar.canRunTo = this.shown.isOp(name);
    if (notify) {
      const leaf = this.shown.selectable(name); // the host echoes it back
      this.cb.onSelect?.(leaf ? name : '', leaf ? leaf.node : null);
    }
  }

  /** Select an op and bring it into view, opening what hides it. */
  goTo(name: string): void {
    this.select(name);
    if (this.shown.reveal(name)) {
      this.relayoutTo(name);
    } else {
      this.canvas.focus.centerOn(name);
    }
  }

  /** Briefly highlight the box of an op (used after jumping to it from elsewhere). */
  flash(name: string): void {
    this.canvas.flash(name);
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
    this.canvas.focus.fit(readable);
  }

  dispose(): void {
    this.layouts.dispose();
    this.feed.dispose();
    this.canvas.dispose();
    this.toolbar.dispose();
    this.root.remove();
  }

  // ------------------------------------------------------------- wiring
  /** Lay out again (soon: the latest request wins). */
  private requestLayout(): void {
    this.layouts.request();
  }

  /** Lay out again, then centre `name`. */
  private relayoutTo(name: string | null): void {
    this.canvas.focus.centerNext(name);
    this.requestLayout();
  }

  /**
   * Too big to show whole at present mode's size: fold a step further
   * (features/present/) and lay out again; false when no step is left.
   */
  private foldToFit(): boolean {
    if (!this.presentation.foldMore()) {
      return false;
    }
    this.group(this.presentation.grouping);
    this.requestLayout();
    return true;
  }

  private unfold(): void {
    this.presentation.unfold();
    this.group('scopes');
  }

  /** Group the graph's root by line or by cell, or not (the hierarchy is built again). */
  private group(grouping: Grouping): void {
    if (this.shown.grouping !== grouping) {
      this.shown.grouping = grouping;
      this.shown.rebuild();
    }
  }

  /** Lay out again, fitted. */
  private refit(): void {
    this.canvas.focus.fitNext();
    this.requestLayout();
  }

  private showRun(run: RunState): void {
    this.errors.update(run);
    if (this.shown.setRun(this.rewrites.run(run))) {
      this.requestLayout();
    }
    this.repaint();
  }

  /** A pass laid out `frame`: draw it, paint the run on it, mark what is marked, look where focus says. */
  private draw(frame: Frame): void {
    this.shown.frame = frame;
    this.canvas.draw(frame);
    this.updateSummary();
    this.root.dataset.flowbookNodes = String(this.canvas.scene.size);
    if (!frame.layout) {
      return;
    }
    this.repaint();
    if (this.shown.selected) {
      this.canvas.markSelected();
    }
    this.markMatches();
    this.canvas.focus.drawn();
  }

  /** Show the run and stepper state on what is drawn: the canvas's marks, the rewrites', compare's. */
  private repaint(): void {
    if (!this.shown.frame) {
      this.updateSummary();
      return;
    }
    const keyOf = (n: string) => this.shown.keyOf(n);
    this.canvas.paint();
    this.rewrites.paint(this.canvas.scene.el, keyOf);
    this.feed.history.paint(this.root, keyOf);
    this.updateSummary();
    this.canvas.refreshDetails();
  }

  private updateSummary(): void {
    this.root.dataset.flowbookOps = String(this.shown.h.root.opCount);
    this.toolbar.setSummary(this.shown.h.root.opCount, this.shown.overlay.run);
  }

  private markMatches(): void {
    const search = this.toolbar.search;
    this.canvas.markMatches(search.matches, search.index);
  }
}

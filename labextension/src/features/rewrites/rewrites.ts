/**
 * Rewrites: the live graph "as written" or "as optimised" (two buttons in
 * the toolbar, shown once the host has sent a plan's rewrite).
 *
 * The host sends the `optimized` state (protocol/rewrites.ts): the plan's
 * ops as written and as run, what became of each written op that does not
 * run as written, the fused ops, and one sentence per rewrite. As optimised,
 * the graph's nodes are redrawn as the optimised plan runs them
 * (`optimizedNodes`, optimized.ts). The run overlay shows the executed ops
 * as the run, so what does not run is dimmed; a strip between the bars and
 * the graph (never over its boxes) gives the summary, and opened (its title)
 * lists the sentences (click one to select its op).
 */

import { html } from '../../paint/dom';
import { Hierarchy, type Grouping } from '../../model/hierarchy';
import type { GraphState } from '../../protocol/graph';
import { normalizeOptimized, type OptimizedState } from '../../protocol/rewrites';
import { EMPTY_RUN, type RunState } from '../../protocol/run';
import { optimizedNodes, type Rewritten } from './optimized';

/** What the Rewrites part asks of its view. */
export interface RewritesHost {
  /** The view switched between as written and as optimised: build the hierarchy again. */
  switched(): void;
  /** Open the scopes hiding an op (the boxes a rewrite made, on switching to them). */
  reveal(name: string): void;
  /** Select an op and bring it into view (a sentence was clicked). */
  goTo(name: string): void;
}

/** The toggle, the sentences' pane, and the graph and run the view draws in either mode. */
export class Rewrites {
  state: OptimizedState | null = null;
  on = false; // showing the graph as optimised
  private rewritten: Rewritten | null = null;
  private readonly toggle: HTMLSpanElement;
  private readonly written: HTMLButtonElement;
  private readonly optimised: HTMLButtonElement;
  private readonly pane: HTMLDivElement;

  /** The toggle in the toolbar (it may go into the toolbar's "⋯" menu, toolbar.ts). */
  get toggleElement(): HTMLElement {
    return this.toggle;
  }

  constructor(toolbar: HTMLElement, viewport: HTMLElement, private readonly host: RewritesHost) {
    const t = (this.toggle = html('span', 'fb-rw-toggle', toolbar));
    t.hidden = true;
    this.written = html('button', 'fb-button fb-rw-written', t, 'As written');
    this.written.title = 'The graph as the code wrote it';
    this.optimised = html('button', 'fb-button fb-rw-optimised', t, 'As optimised');
    this.optimised.title = 'The plan the graph optimiser runs: folded, merged, removed and fused ops';
    this.written.addEventListener('click', () => this.switch(false));
    this.optimised.addEventListener('click', () => this.switch(true));
    // a strip of its own above the graph (before the viewport), never over its boxes
    this.pane = html('div', 'fb-rw-pane', viewport.parentElement ?? viewport);
    viewport.before(this.pane);
    this.pane.hidden = true;
    this.pane.classList.add('fb-collapsed'); // its summary line; the title opens the sentences
    this.pane.addEventListener('click', ev => {
      if ((ev.target as Element).closest('.fb-rw-title')) {
        this.pane.classList.toggle('fb-collapsed');
        const open = !this.pane.classList.contains('fb-collapsed');
        this.pane.querySelector('.fb-rw-title')?.setAttribute('aria-expanded', String(open));
        return;
      }
      const li = (ev.target as Element).closest('li');
      if (li?.dataset.op) {
        this.host.goTo(li.dataset.op);
      }
    });
  }

  /** A rewrite from the host (null or {}: none). */
  set(x: unknown): void {
    this.state = normalizeOptimized(x);
    this.rewritten = null;
    this.toggle.hidden = this.state === null;
    this.renderPane();
    this.switch(this.state !== null && (this.state.show || this.on), true);
  }

  /** Show the graph as optimised (`on`) or as written. */
  switch(on: boolean, force = false): void {
    on = on && this.state !== null;
    if (on === this.on && !force) {
      return;
    }
    this.on = on;
    this.written.setAttribute('aria-pressed', String(!on));
    this.optimised.setAttribute('aria-pressed', String(on));
    this.written.classList.toggle('fb-on', !on);
    this.optimised.classList.toggle('fb-on', on);
    this.pane.hidden = !on;
    this.host.switched();
    if (on && this.rewritten) {
      this.shownFirst(this.rewritten).forEach(n => this.host.reveal(n));
    }
  }

  /** The hierarchy the view draws: the graph's, or the graph as optimised. */
  hierarchy(g: GraphState, grouping: Grouping = 'scopes'): Hierarchy {
    if (!this.on || !this.state) {
      return new Hierarchy(g.nodes, g.control_flow, grouping);
    }
    const rw = (this.rewritten = optimizedNodes(g.nodes, this.state));
    const h = new Hierarchy(rw.nodes, g.control_flow, grouping);
    for (const [name, label] of rw.labels) {
      const leaf = h.leaves.get(name);
      if (leaf) {
        leaf.short = label;
      }
    }
    return h;
  }

  /** The run the overlay shows: as optimised, the executed ops are the run (the rest dimmed). */
  run(live: RunState): RunState {
    if (!this.on || !this.rewritten) {
      return live;
    }
    return { ...EMPTY_RUN, seq: Math.max(1, live.seq), phase: 'idle', pruned: this.rewritten.pruned, fed: live.fed };
  }

  /** Mark the boxes that a rewrite made or changed (classes fb-rw-<mark>). */
  paint(scene: Element, keyOf: (name: string) => string | undefined): void {
    for (const el of scene.querySelectorAll('[data-rw]')) {
      el.removeAttribute('data-rw');
    }
    if (!this.on || !this.rewritten) {
      return;
    }
    for (const [name, mark] of this.rewritten.marks) {
      const key = keyOf(name);
      if (key === name) {
        scene.querySelector(`.fb-node[data-name="${CSS.escape(name)}"]`)?.setAttribute('data-rw', mark);
      }
    }
  }

  /** The boxes to open scopes for on switching: the new ones (folded values, fused ops). */
  private shownFirst(rw: Rewritten): string[] {
    return [...rw.marks].filter(([, m]) => m === 'const' || m === 'fused' || m === 'merged').map(([n]) => n);
  }

  private renderPane(): void {
    const p = this.pane;
    p.textContent = '';
    const s = this.state;
    if (!s) {
      return;
    }
    const title = html('button', 'fb-rw-title', p, 'What the optimiser did');
    title.title = 'Show or hide what the optimiser did, op by op';
    title.setAttribute('aria-expanded', String(!p.classList.contains('fb-collapsed')));
    html('div', 'fb-rw-summary', p, s.summary);
    const ol = html('ol', 'fb-rw-notes', p);
    for (const note of s.notes) {
      const li = html('li', '', ol, note);
      const m = /'([^']+)'/.exec(note);
      if (m) {
        li.dataset.op = m[1];
        li.title = 'Click to select it in the graph';
      }
    }
  }
}

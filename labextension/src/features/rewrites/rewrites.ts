/**
 * Rewrites: the live graph "as written" or "as optimised" (two buttons in
 * the toolbar, shown once the host has sent a plan's rewrite).
 *
 * The host sends the `optimized` state (flowbook/notebook/rewrites.py, from
 * `PlanRewrite.diff`): the plan's ops as written and as run, what became of
 * each written op that does not run as written, the fused ops, and one
 * sentence per rewrite. As optimised, the graph's nodes are redrawn as the
 * optimised plan runs them (`optimizedNodes`):
 * - a folded op stays, dimmed (with the ops that only fed it); each folded
 *   value a running op reads is a constant box of its own, "Shape = [5, 3]";
 * - a merged duplicate is gone: its readers read the op it merged with,
 *   whose box says "×2 merged";
 * - a removed identity (Identity, a variable's snapshot, a reshape to the same
 *   shape, a NoOp) is gone: its readers read its input;
 * - a fused op is one box in place of those it replaced, listing their types.
 * The run overlay shows the executed ops as the run, so what does not run is
 * dimmed; a pane lists the sentences (click one to select its op).
 */

import { html } from './draw';
import { Hierarchy } from './hierarchy';
import { EMPTY_RUN, type GraphState, type NodeSpec, type RunState } from './types';

export interface ChangeSpec {
  kind: string; // "folded" | "merged" | "removed" | "fused" | "dropped"
  op: string; // the written op
  into: string; // merged: the op kept; removed: the tensor read instead; fused: the fused op
  text: string; // folded: its value
}

export interface FusedSpec {
  name: string;
  op: string;
  inputs: string[]; // written tensor names
  replaces: string[];
}

export interface OptimizedState {
  summary: string;
  written: string[];
  executed: string[];
  changes: ChangeSpec[];
  fused: FusedSpec[];
  notes: string[];
  show: boolean; // switch to the optimised view on arrival
}

export const FOLDED = ' (folded)'; // suffix of a folded value's constant box
const VALUE_MAX = 22; // characters of a folded value shown in its box (the tooltip has all)

const strings = (x: unknown): string[] => (Array.isArray(x) ? x.map(String) : []);

export function normalizeOptimized(x: unknown): OptimizedState | null {
  const o = (x ?? {}) as Partial<OptimizedState>;
  if (!Array.isArray(o.executed) || !Array.isArray(o.written)) {
    return null;
  }
  return {
    summary: String(o.summary ?? ''),
    written: strings(o.written),
    executed: strings(o.executed),
    changes: (Array.isArray(o.changes) ? o.changes : []).map(c => ({
      kind: String(c?.kind ?? ''),
      op: String(c?.op ?? ''),
      into: String(c?.into ?? ''),
      text: String(c?.text ?? '')
    })),
    fused: (Array.isArray(o.fused) ? o.fused : []).map(f => ({
      name: String(f?.name ?? ''),
      op: String(f?.op ?? ''),
      inputs: strings(f?.inputs),
      replaces: strings(f?.replaces)
    })),
    notes: strings(o.notes),
    show: Boolean(o.show)
  };
}

/** The graph as the optimised plan runs it. */
export interface Rewritten {
  nodes: NodeSpec[];
  pruned: string[]; // what runs: the executed ops and the folded values they read
  marks: Map<string, string>; // box name -> "folded" | "dropped" | "const" | "merged" | "fused"
  labels: Map<string, string>; // box name -> its label (the folded values)
}

const split = (t: string): [string, string] => {
  const i = t.lastIndexOf(':');
  return i > 0 ? [t.slice(0, i), t.slice(i + 1)] : [t, '0'];
};
const last = (name: string): string => name.slice(name.lastIndexOf('/') + 1);

/** `nodes` redrawn as `d`'s optimised plan runs them (see the module doc). */
export function optimizedNodes(nodes: NodeSpec[], d: OptimizedState): Rewritten {
  const change = new Map(d.changes.map(c => [c.op, c]));
  const nodeOf = new Map(nodes.map(n => [n.name, n]));
  const out: Rewritten = { nodes: [], pruned: [...d.executed], marks: new Map(), labels: new Map() };
  const consts = new Map<string, NodeSpec>();
  const constFor = (op: string, c: ChangeSpec): string => {
    const name = op + FOLDED;
    const n = nodeOf.get(op);
    if (!consts.has(name) && n) {
      consts.set(name, { ...n, name, op: 'Const', kind: 'constant', inputs: [], control: [], stale: false });
      const value = c.text.length > VALUE_MAX ? `${c.text.slice(0, VALUE_MAX - 1)}\u2026` : c.text;
      out.labels.set(name, `${last(op)} = ${value}`);
      out.marks.set(name, 'const');
      out.pruned.push(name);
    }
    return name;
  };
  const resolve = (tensor: string): string => {
    for (let hops = 0; hops < 64; hops++) {
      const [op, k] = split(tensor);
      const c = change.get(op);
      if (!c || c.kind === 'dropped') {
        return tensor;
      }
      if (c.kind === 'folded') {
        return `${constFor(op, c)}:${k}`;
      }
      if (c.kind === 'removed' && !c.into) {
        return '';
      }
      tensor = c.kind === 'merged' ? `${c.into}:${k}` : c.kind === 'fused' ? `${c.into}:0` : c.into;
    }
    return tensor;
  };
  const waitFor = (op: string): string => {
    const c = change.get(op);
    return !c ? op : c.kind === 'merged' || c.kind === 'fused' ? c.into : '';
  };
  const rewire = (n: NodeSpec): NodeSpec => ({
    ...n,
    inputs: n.inputs.map(resolve).filter(t => t && split(t)[0] !== n.name),
    control: n.control.map(waitFor).filter(c => c && c !== n.name)
  });
  const executed = new Set(d.executed);
  const merged = new Map<string, number>();
  for (const c of d.changes) {
    if (c.kind === 'merged') {
      merged.set(c.into, (merged.get(c.into) ?? 1) + 1);
    }
  }
  for (const n of nodes) {
    const c = change.get(n.name);
    if (c && (c.kind === 'merged' || c.kind === 'removed' || c.kind === 'fused')) {
      continue; // not drawn: its readers read what stands for it now
    }
    if (c) {
      out.marks.set(n.name, c.kind); // folded or dropped: drawn dimmed, as written
      out.nodes.push(n);
    } else if (executed.has(n.name)) {
      const times = merged.get(n.name);
      out.nodes.push(rewire(times ? { ...n, op: `${n.op} \u00D7${times} merged` } : n));
      if (times) {
        out.marks.set(n.name, 'merged');
      }
    } else {
      out.nodes.push(n);
    }
  }
  for (const f of d.fused) {
    const first = nodeOf.get(f.replaces[f.replaces.length - 1] ?? '') ?? nodeOf.get(f.replaces[0] ?? '');
    const types = f.replaces.map(r => nodeOf.get(r)?.op ?? last(r));
    out.nodes.push(
      rewire({
        name: f.name,
        op: `${f.op} \u27F5 ${types.join(' + ')}`,
        kind: 'op',
        device: first?.device ?? '',
        inputs: f.inputs,
        control: [],
        outputs: first?.outputs ?? [],
        cell: first?.cell ?? null,
        count: first?.count ?? null,
        line: first?.line ?? null,
        code: `fused: ${f.replaces.join(', ')}`,
        stale: false
      })
    );
    out.marks.set(f.name, 'fused');
  }
  out.nodes.push(...consts.values());
  return out;
}

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

  constructor(toolbar: HTMLElement, viewport: HTMLElement, private readonly host: RewritesHost) {
    const t = (this.toggle = html('span', 'fb-rw-toggle', toolbar));
    t.hidden = true;
    this.written = html('button', 'fb-button fb-rw-written', t, 'As written');
    this.written.title = 'The graph as the code wrote it';
    this.optimised = html('button', 'fb-button fb-rw-optimised', t, 'As optimised');
    this.optimised.title = 'The plan the graph optimiser runs: folded, merged, removed and fused ops';
    this.written.addEventListener('click', () => this.switch(false));
    this.optimised.addEventListener('click', () => this.switch(true));
    this.pane = html('div', 'fb-rw-pane', viewport);
    this.pane.hidden = true;
    this.pane.addEventListener('click', ev => {
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
  hierarchy(g: GraphState): Hierarchy {
    if (!this.on || !this.state) {
      return new Hierarchy(g.nodes, g.control_flow);
    }
    const rw = (this.rewritten = optimizedNodes(g.nodes, this.state));
    const h = new Hierarchy(rw.nodes, g.control_flow);
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
    html('div', 'fb-rw-title', p, 'What the optimiser did');
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

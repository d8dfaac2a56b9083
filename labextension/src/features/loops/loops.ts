/**
 * Loops and branches: which name scopes are while-loop frames and conds
 * (the graph state's `control_flow`, flowbook/notebook/loops.py), and what
 * the run shown did in them (the run state's `control_flow`).
 *
 * A loop's scope is drawn as a frame: its box and its open cluster say
 * "while loop" and carry a counter, "iteration 412" while a run is in it
 * (the kernel sends the count at its usual push rate), "ran 1,000
 * iterations" after. A cond's scope says "cond" and, after a run, which
 * branch it took; the ops of the branch not taken ran 0 times, and the
 * overlay dims them (overlay.ts).
 *
 * The counter is text in a slot the box or cluster drew for it (draw.ts);
 * `paintFrames` only sets that text on each update, never a layout.
 */

import type { Group, Hierarchy } from './hierarchy';
import type { RunState } from './types';

/** A while loop's frame: its frame name, the scope its ops are in, its enclosing loop's frame. */
export interface LoopSpec {
  frame: string; // "loop/while_context"
  scope: string; // "loop"
  parent: string | null;
}

export interface ControlFlowGraph {
  loops: LoopSpec[];
  conds: string[]; // the scopes of conds
}

export interface ControlFlowRun {
  at: Record<string, number>; // a running run: per frame entered, its newest instance's iterations
  iterations: Record<string, number>; // after: body iterations per frame (all instances)
  entries: Record<string, number>; // after: how many times each frame was entered
  not_run: string[]; // after: ops of the run that ran 0 times (an untaken branch)
  taken: Record<string, string>; // after: per cond scope, "true" | "false" | "both" | "none"
}

export const EMPTY_CONTROL_FLOW: ControlFlowRun = { at: {}, iterations: {}, entries: {}, not_run: [], taken: {} };

function record(x: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (x && typeof x === 'object' && !Array.isArray(x)) {
    for (const [k, v] of Object.entries(x)) {
      if (typeof v === 'number') {
        out[k] = v;
      }
    }
  }
  return out;
}

export function normalizeControlFlowGraph(x: unknown): ControlFlowGraph {
  const o = (x ?? {}) as Partial<ControlFlowGraph>;
  const loops = Array.isArray(o.loops) ? o.loops : [];
  return {
    loops: loops
      .filter(l => l && typeof l.frame === 'string' && typeof l.scope === 'string')
      .map(l => ({ frame: l.frame, scope: l.scope, parent: typeof l.parent === 'string' ? l.parent : null })),
    conds: Array.isArray(o.conds) ? o.conds.filter(c => typeof c === 'string') : []
  };
}

export function normalizeControlFlowRun(x: unknown): ControlFlowRun {
  const o = (x ?? {}) as Partial<ControlFlowRun>;
  const taken: Record<string, string> = {};
  if (o.taken && typeof o.taken === 'object') {
    for (const [k, v] of Object.entries(o.taken)) {
      taken[k] = String(v);
    }
  }
  return {
    at: record(o.at),
    iterations: record(o.iterations),
    entries: record(o.entries),
    not_run: Array.isArray(o.not_run) ? o.not_run.map(String) : [],
    taken
  };
}

/** Mark the groups of `h` that are loop frames (`frame: 'while'`, `loop`: its frame name) or conds. */
export function markFrames(h: Hierarchy, cf: ControlFlowGraph): void {
  for (const l of cf.loops) {
    const g = h.groups.get(l.scope);
    if (g && g.kind === 'scope') {
      g.frame = 'while';
      g.loop = l.frame;
      g.nested = l.parent !== null;
    }
  }
  for (const scope of cf.conds) {
    const g = h.groups.get(scope);
    if (g && g.kind === 'scope' && !g.frame) {
      g.frame = 'cond';
    }
  }
}

/** "1,000". */
function count(n: number): string {
  return n.toLocaleString('en-US');
}

const TAKEN: Record<string, string> = {
  true: 'took the true branch',
  false: 'took the false branch',
  both: 'took both branches',
  none: 'did not run'
};

/** A frame group's counter for the run shown ('' for none) and whether it is moving. */
export function frameText(g: Group, run: RunState): { text: string; live: boolean } {
  const cf = run.control_flow;
  if (g.frame === 'while' && g.loop) {
    const at = cf.at[g.loop];
    if (run.phase === 'running') {
      return at === undefined ? { text: '', live: false } : { text: `iteration ${count(at)}`, live: true };
    }
    const n = cf.iterations[g.loop];
    if (n === undefined) {
      return { text: '', live: false };
    }
    const entered = cf.entries[g.loop] ?? 1;
    const times = entered > 1 ? `, entered ${count(entered)} times` : '';
    return { text: `ran ${count(n)} iteration${n === 1 ? '' : 's'}${times}`, live: false };
  }
  if (g.frame === 'cond' && run.phase !== 'running') {
    const t = cf.taken[g.key];
    return { text: t === undefined ? '' : (TAKEN[t] ?? ''), live: false };
  }
  return { text: '', live: false };
}

/** Set the counter of every frame drawn under `scene` (boxes and open clusters) for `run`. */
export function paintFrames(scene: Element, h: Hierarchy, run: RunState): void {
  for (const el of scene.querySelectorAll('.fb-frame-count')) {
    const g = h.groups.get(el.getAttribute('data-name') ?? '');
    const { text, live } = g ? frameText(g, run) : { text: '', live: false };
    if (el.textContent !== text) {
      el.textContent = text;
    }
    el.classList.toggle('fb-live', live);
  }
}

/** The widest counter a frame makes room for (a box's width, a cluster's title band). */
export function counterRoom(g: Group): string {
  if (g.frame === 'cond') {
    return TAKEN.false;
  }
  return g.nested ? 'ran 10,000 iterations, entered 100 times' : 'ran 100,000 iterations';
}

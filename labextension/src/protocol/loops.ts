/**
 * Loops and branches, as the Python side sends them (flowbook/notebook/loops.py):
 * which name scopes are while-loop frames and conds (the graph state's
 * `control_flow`), and what the run shown did in them (the run state's
 * `control_flow`).
 */

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

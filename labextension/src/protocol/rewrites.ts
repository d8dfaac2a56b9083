/**
 * A plan's rewrite, as the Python side sends it (the `optimized` state,
 * flowbook/notebook/rewrites.py, from `PlanRewrite.diff`): the plan's ops as
 * written and as run, what became of each written op that does not run as
 * written, the fused ops, and one sentence per rewrite.
 */

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

/**
 * The run list the Python side sends (the `history` trait, the panel's
 * `{history}` message; flowbook/notebook/history.py) and the kept runs it
 * sends when asked (`{history_run}`) or to replay (`{replay}`).
 */

import { normalizeRun, type RunPhase, type RunState } from './run';

/** One row of the run list (flowbook/notebook/history.py, `RunEntry.summary`). */
export interface HistoryRow {
  seq: number;
  phase: RunPhase;
  total_us: number;
  ops: number; // ops in its subgraph
  fetches: string[]; // what it computed (the subgraph's sinks, first three)
}

/** The run list: the kept runs of the graph, newest last. */
export interface HistoryState {
  runs: HistoryRow[];
}

/** A kept run, sent when asked for (`RunEntry.state`): a run state plus its execution order. */
export interface KeptRun extends RunState {
  order: string[]; // op names in the order they ran
  times_seq: number; // the run whose kernel times these are (runs watched whole reuse them)
  values_seq: number; // the run whose values these are
  fetches: string[];
}

export function normalizeHistory(h: unknown): HistoryState {
  const o = (h ?? {}) as Partial<HistoryState>;
  const runs = Array.isArray(o.runs) ? o.runs : [];
  return {
    runs: runs
      .filter(r => r && typeof r.seq === 'number')
      .map(r => ({
        seq: r.seq,
        phase: r.phase ?? 'done',
        total_us: typeof r.total_us === 'number' ? r.total_us : 0,
        ops: typeof r.ops === 'number' ? r.ops : 0,
        fetches: Array.isArray(r.fetches) ? r.fetches.map(String) : []
      }))
  };
}

/** A kept run as the kernel sent it; null when it is no longer kept. */
export function normalizeKeptRun(r: unknown): KeptRun | null {
  const o = (r ?? {}) as Partial<KeptRun>;
  if (!Array.isArray(o.pruned)) {
    return null;
  }
  const run = normalizeRun(r);
  return {
    ...run,
    order: Array.isArray(o.order) ? o.order.map(String) : run.pruned,
    times_seq: typeof o.times_seq === 'number' ? o.times_seq : 0,
    values_seq: typeof o.values_seq === 'number' ? o.values_seq : 0,
    fetches: Array.isArray(o.fetches) ? o.fetches.map(String) : []
  };
}

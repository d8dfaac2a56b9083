/**
 * The run state the Python side sends (the `run` trait, the panel's `{run}`
 * message): the newest run of the graph, as it runs and after; and the ticks
 * that amend it with later runs of the same plan, watched whole.
 */

import { EMPTY_CONTROL_FLOW, normalizeControlFlowRun, type ControlFlowRun } from './loops';
import { EMPTY_QUEUES, normalizeQueues, type QueuesRun } from './queues';

export type RunPhase = 'idle' | 'running' | 'done' | 'error';

export interface RunError {
  node: string;
  message: string;
  nan: boolean;
}

/** A copy node the plan inserted where an edge crosses devices (it is not in the graph). */
export interface CopySpec {
  name: string; // "x/_copy_to_GPU_0"
  op: string; // "_CopyHostToDevice", "_CopyDeviceToHost" or "_CopyDeviceToDevice"
  src: string; // the op that produced the copied value
  tensor: string; // the copied value, "x:0"
  src_device: string; // "CPU:0"
  dst_device: string; // "GPU:0"
  readers: string[]; // graph ops that read the copy (none when it only serves a fetch)
  fetch: boolean; // the copy brings a fetched value back
}

export interface RunState {
  seq: number;
  phase: RunPhase;
  pruned: string[]; // the ops of the last run's subgraph
  fed: string[];
  done: string[];
  running: string[];
  error: RunError | null;
  times_us: Record<string, number>;
  total_us: number;
  values: Record<string, string>;
  placement: Record<string, string>; // op name -> "GPU:0"; empty for a CPU-only plan
  copies: CopySpec[];
  control_flow: ControlFlowRun; // where its loops are, what they and its conds did (loops.ts)
  queues: QueuesRun; // the queues' levels and the ops waiting now (queues.ts)
}


export const EMPTY_RUN: RunState = {
  seq: 0,
  phase: 'idle',
  pruned: [],
  fed: [],
  done: [],
  running: [],
  error: null,
  times_us: {},
  total_us: 0,
  values: {},
  placement: {},
  copies: [],
  control_flow: EMPTY_CONTROL_FLOW,
  queues: EMPTY_QUEUES
};

export function normalizeRun(r: unknown): RunState {
  const o = (r ?? {}) as Partial<RunState>;
  return {
    seq: typeof o.seq === 'number' ? o.seq : 0,
    phase: o.phase ?? 'idle',
    pruned: Array.isArray(o.pruned) ? o.pruned : [],
    fed: Array.isArray(o.fed) ? o.fed : [],
    done: Array.isArray(o.done) ? o.done : [],
    running: Array.isArray(o.running) ? o.running : [],
    error: o.error && typeof o.error === 'object' ? o.error : null,
    times_us: o.times_us && typeof o.times_us === 'object' ? o.times_us : {},
    total_us: typeof o.total_us === 'number' ? o.total_us : 0,
    values: o.values && typeof o.values === 'object' ? o.values : {},
    placement: normalizePlacement(o.placement),
    copies: normalizeCopies(o.copies),
    control_flow: normalizeControlFlowRun(o.control_flow),
    queues: normalizeQueues(o.queues)
  };
}

export function normalizePlacement(p: unknown): Record<string, string> {
  return p && typeof p === 'object' && !Array.isArray(p) ? (p as Record<string, string>) : {};
}

export function normalizeCopies(c: unknown): CopySpec[] {
  if (!Array.isArray(c)) {
    return [];
  }
  const out: CopySpec[] = [];
  for (const x of c as Partial<CopySpec>[]) {
    if (!x || typeof x.name !== 'string' || typeof x.src !== 'string') {
      continue;
    }
    out.push({
      name: x.name,
      op: String(x.op ?? ''),
      src: x.src,
      tensor: typeof x.tensor === 'string' ? x.tensor : `${x.src}:0`,
      src_device: String(x.src_device ?? ''),
      dst_device: String(x.dst_device ?? ''),
      readers: Array.isArray(x.readers) ? x.readers.map(String) : [],
      fetch: Boolean(x.fetch)
    });
  }
  return out;
}

/** A tick: runs watched whole since the `run` state with seq `base`, the newest's number and time. */
export interface Tick {
  seq: number;
  total_us: number;
  base: number;
}

/** `t` as a Tick, or null if it is not one. */
export function normalizeTick(t: unknown): Tick | null {
  const o = (t ?? {}) as Partial<Tick>;
  if (typeof o.seq !== 'number' || typeof o.base !== 'number') {
    return null;
  }
  return { seq: o.seq, total_us: typeof o.total_us === 'number' ? o.total_us : 0, base: o.base };
}

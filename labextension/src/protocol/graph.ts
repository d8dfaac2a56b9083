/**
 * The state the Python side sends (GraphWidget traits and the side panel's
 * comm messages use the same three objects). All names are op names, which
 * stay the same when a notebook cell is re-run.
 */

import {
  EMPTY_CONTROL_FLOW,
  normalizeControlFlowGraph,
  normalizeControlFlowRun,
  type ControlFlowGraph,
  type ControlFlowRun
} from './loops';
import { EMPTY_QUEUES, normalizeQueues, type QueuesRun } from './queues';

export type NodeKind = 'op' | 'variable' | 'placeholder' | 'constant' | 'copy';

export interface NodeSpec {
  name: string; // "layer1/MatMul"
  op: string; // op type, "MatMul"
  kind: NodeKind;
  device: string;
  inputs: string[]; // data inputs as tensor names "<op name>:<index>", in order
  control: string[]; // op names of control inputs
  outputs: [string, string][]; // (dtype, shape) per output
  cell: string | null; // JupyterLab cell id that created it
  count: number | null; // execution count of that cell
  line: number | null;
  code: string | null; // the source line
  stale: boolean;
}

export interface GraphState {
  id: string;
  version: number;
  nodes: NodeSpec[];
  control_flow: ControlFlowGraph; // the scopes that are loop frames and conds (loops.ts)
}

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

export interface StepperState {
  active: boolean;
  current: string | null;
  done: string[];
  ready: string[];
  pruned: string[];
  values: Record<string, string>;
  message: string;
  placement: Record<string, string>;
  copies: CopySpec[];
}

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

/** The actions the stepper toolbar sends back to Python. */
export type StepAction = 'step' | 'run_to' | 'cont' | 'reset';

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

export const EMPTY_STEPPER: StepperState = {
  active: false,
  current: null,
  done: [],
  ready: [],
  pruned: [],
  values: {},
  message: '',
  placement: {},
  copies: []
};

/** Accept whatever arrived (null, partial objects) and fill in the blanks. */
export function normalizeGraph(g: unknown): GraphState {
  const o = (g ?? {}) as Partial<GraphState>;
  const nodes = Array.isArray(o.nodes) ? o.nodes : [];
  return {
    id: typeof o.id === 'string' ? o.id : '',
    version: typeof o.version === 'number' ? o.version : 0,
    nodes: nodes
      .filter(n => n && typeof n.name === 'string' && n.name.length > 0)
      .map(n => ({
        name: n.name,
        op: String(n.op ?? ''),
        kind: (['op', 'variable', 'placeholder', 'constant', 'copy'] as const).includes(n.kind)
          ? n.kind
          : 'op',
        device: String(n.device ?? ''),
        inputs: Array.isArray(n.inputs) ? n.inputs.map(String) : [],
        control: Array.isArray(n.control) ? n.control.map(String) : [],
        outputs: Array.isArray(n.outputs)
          ? n.outputs.map(o2 => [String(o2?.[0] ?? ''), String(o2?.[1] ?? '')] as [string, string])
          : [],
        cell: n.cell == null ? null : String(n.cell),
        count: typeof n.count === 'number' ? n.count : null,
        line: typeof n.line === 'number' ? n.line : null,
        code: n.code == null ? null : String(n.code),
        stale: Boolean(n.stale)
      })),
    control_flow: normalizeControlFlowGraph(o.control_flow)
  };
}

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

export function normalizeStepper(s: unknown): StepperState {
  const o = (s ?? {}) as Partial<StepperState>;
  return {
    active: Boolean(o.active),
    current: typeof o.current === 'string' ? o.current : null,
    done: Array.isArray(o.done) ? o.done : [],
    ready: Array.isArray(o.ready) ? o.ready : [],
    pruned: Array.isArray(o.pruned) ? o.pruned : [],
    values: o.values && typeof o.values === 'object' ? o.values : {},
    message: typeof o.message === 'string' ? o.message : '',
    placement: normalizePlacement(o.placement),
    copies: normalizeCopies(o.copies)
  };
}

function normalizePlacement(p: unknown): Record<string, string> {
  return p && typeof p === 'object' && !Array.isArray(p) ? (p as Record<string, string>) : {};
}

function normalizeCopies(c: unknown): CopySpec[] {
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

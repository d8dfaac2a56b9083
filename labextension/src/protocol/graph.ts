/**
 * The graph state the Python side sends (the GraphWidget's `graph` trait and
 * the side panel's `{graph}` comm message): the ops, by name, and which name
 * scopes are loops and conds. Op names stay the same when a notebook cell is
 * re-run, so everything keyed by name survives a graph update.
 *
 * This module and its siblings under protocol/ are the messages and records
 * exchanged with Python, and how a browser reads them: each `normalize*`
 * accepts whatever arrived (null, partial objects) and fills in the blanks.
 * They import nothing but each other.
 */

import { normalizeControlFlowGraph, type ControlFlowGraph } from './loops';

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
  stmt: number | null; // the first line of the statement that made it (a call over lines)
  stmt_code: string | null; // that line's text, when it is not `line`
  stale: boolean;
}

export interface GraphState {
  id: string;
  version: number;
  nodes: NodeSpec[];
  control_flow: ControlFlowGraph; // the scopes that are loop frames and conds (protocol/loops.ts)
}

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
        stmt: typeof n.stmt === 'number' ? n.stmt : null,
        stmt_code: n.stmt_code == null ? null : String(n.stmt_code),
        stale: Boolean(n.stale)
      })),
    control_flow: normalizeControlFlowGraph(o.control_flow)
  };
}

/**
 * The graph as a plan's rewrite (protocol/rewrites.ts) runs it: the graph's
 * nodes redrawn as the optimised plan runs them.
 * - a folded op stays, dimmed (with the ops that only fed it); each folded
 *   value a running op reads is a constant box of its own, "Shape = [5, 3]";
 * - a merged duplicate is gone: its readers read the op it merged with,
 *   whose box says "×2 merged";
 * - a removed identity (Identity, a variable's snapshot, a reshape to the same
 *   shape, a NoOp) is gone: its readers read its input;
 * - a fused op is one box in place of those it replaced, listing their types.
 */

import type { NodeSpec } from '../../protocol/graph';
import type { ChangeSpec, OptimizedState } from '../../protocol/rewrites';

export const FOLDED = ' (folded)'; // suffix of a folded value's constant box
const VALUE_MAX = 22; // characters of a folded value shown in its box (the tooltip has all)

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
        stmt: first?.stmt ?? null,
        stmt_code: first?.stmt_code ?? null,
        stale: false
      })
    );
    out.marks.set(f.name, 'fused');
  }
  out.nodes.push(...consts.values());
  return out;
}

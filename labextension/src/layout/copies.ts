/**
 * Copy nodes: where a run's plan moved a value between devices
 * (`_CopyHostToDevice`, `_CopyDeviceToHost`, `_CopyDeviceToDevice`, named
 * like `x/_copy_to_GPU_0`). They are not ops of the graph, so they are not
 * in the name-scope hierarchy: each is drawn as a small box of its own on
 * the edge it splits, src -> copy -> readers (a copy that brings a fetched
 * value back: src -> copy).
 *
 * Collapsed scopes are respected: the copy goes between the visible boxes
 * standing for its source and its readers, inside the innermost expanded
 * group holding them all; a copy whose readers all fold into its source's
 * box is internal to it and not drawn. Copies that fold onto the same boxes
 * (same source box, same reader boxes, same direction and device) share one
 * box, "3 copies -> GPU:0", which stands for each of them.
 *
 * The op-level edges a drawn copy replaces are handed to `visibleEdges` as
 * `diverted`, so the direct edge src -> reader is not drawn as well.
 */

import type { Group, Leaf, Visible, VisibleGraph } from '../model/hierarchy';
import type { Edge } from './dot';
import { sendRecvLabel } from '../features/tasks/tasks';
import type { NodeSpec } from '../protocol/graph';
import type { CopySpec, RunState } from '../protocol/run';
import type { StepperState } from '../protocol/stepper';

const MAX_COPIES = 2000; // copies kept over runs; past it, only the latest run's

export interface CopyLayout {
  boxes: Leaf[]; // one per drawn copy box, to lay out beside the visible boxes
  edges: Edge[]; // src -> copy box -> readers (ids "c<i>": renumber before dot)
  diverted: Set<string>; // "<tensor>><reader>": op-level edges that go through a copy
  byName: Map<string, Leaf>; // each drawn copy, merged ones included -> its own leaf
  boxOf: Map<string, Leaf>; // each drawn copy -> the box standing for it
}

export const EMPTY_COPIES: CopyLayout = {
  boxes: [],
  edges: [],
  diverted: new Set(),
  byName: new Map(),
  boxOf: new Map()
};

/**
 * The copy nodes of the runs shown, by name, readers merged over runs.
 * Copies stay over runs (runs of different plans would otherwise relayout
 * each time) and are dimmed when the run shown did not use them; a run
 * wholly on the CPU clears them. `fold` says when the set to lay out
 * changed, which is when the view lays out again.
 */
export class CopySet {
  private readonly specs = new Map<string, CopySpec>();
  private sig = ''; // copySignature of `specs` when `fold` last said it changed

  get size(): number {
    return this.specs.size;
  }

  get(name: string): CopySpec | undefined {
    return this.specs.get(name);
  }

  names(): IterableIterator<string> {
    return this.specs.keys();
  }

  values(): IterableIterator<CopySpec> {
    return this.specs.values();
  }

  /** Forget every copy (another graph: the copies seen were between its ops). */
  clear(): void {
    this.specs.clear();
    this.sig = '';
  }

  /** Fold in the copies of a run (and of the stepper's plan); true when the set changed. */
  fold(run: RunState, st: StepperState): boolean {
    const specs = this.specs;
    const lists = st.active ? [run.copies, st.copies] : [run.copies];
    let changed = false;
    const cpuOnly = run.seq > 0 && run.copies.length === 0 && isEmpty(run.placement);
    if (cpuOnly && !(st.active && st.copies.length > 0) && specs.size > 0) {
      specs.clear();
      changed = true;
    }
    if (specs.size + run.copies.length > MAX_COPIES) {
      specs.clear();
      changed = true;
    }
    for (const list of lists) {
      for (const c of list) {
        const old = specs.get(c.name);
        const merged = old ? mergeCopy(old, c) : c;
        if (merged) {
          specs.set(c.name, merged);
          changed = true;
        }
      }
    }
    if (!changed) {
      return false;
    }
    const sig = copySignature(specs.values());
    if (sig === this.sig) {
      return false;
    }
    this.sig = sig;
    return true;
  }
}

function isEmpty(o: Record<string, unknown>): boolean {
  for (const _ in o) {
    return false;
  }
  return true;
}

/** A string that changes exactly when the copies to lay out change. */
export function copySignature(copies: Iterable<CopySpec>): string {
  const parts: string[] = [];
  for (const c of copies) {
    parts.push(`${c.name}\u0000${c.tensor}\u0000${c.dst_device}\u0000${c.readers.join('\u0001')}\u0000${c.fetch ? 1 : 0}`);
  }
  return parts.join('\u0002');
}

/** The short label of a copy box: "copy → GPU:0", "3 copies → GPU:0". */
export function copyLabel(spec: CopySpec, n = 1): string {
  const pair = sendRecvLabel(spec, n); // a Send/Recv pair between tasks (tasks.ts)
  if (pair) {
    return pair;
  }
  return `${n === 1 ? 'copy' : `${n} copies`} \u2192 ${spec.dst_device || '?'}`;
}

/** Merge two specs of the same copy seen in different runs (readers may differ per plan). */
export function mergeCopy(a: CopySpec, b: CopySpec): CopySpec | null {
  const readers = [...a.readers];
  for (const r of b.readers) {
    if (!readers.includes(r)) {
      readers.push(r);
    }
  }
  const fetch = a.fetch || b.fetch;
  if (readers.length === a.readers.length && fetch === a.fetch && b.dst_device === a.dst_device) {
    return null;
  }
  return { ...b, readers, fetch };
}

function copyNode(spec: CopySpec, src: Leaf): NodeSpec {
  const colon = spec.tensor.lastIndexOf(':');
  const out = src.node.outputs[colon > 0 ? Number(spec.tensor.slice(colon + 1)) || 0 : 0];
  return {
    name: spec.name,
    op: spec.op,
    kind: 'copy',
    device: spec.dst_device,
    inputs: [spec.tensor],
    control: [],
    outputs: out ? [out] : [],
    cell: src.node.cell, // the side panel jumps to the cell that made the value
    count: src.node.count,
    line: null,
    code: null,
    stmt: null,
    stmt_code: null,
    stale: false
  };
}

/** The innermost group holding both (the root at worst). */
function commonGroup(a: Group, b: Group): Group {
  const seen = new Set<Group>();
  for (let g: Group | null = a; g; g = g.parent) {
    seen.add(g);
  }
  for (let g: Group | null = b; g; g = g.parent) {
    if (seen.has(g)) {
      return g;
    }
  }
  return a;
}

interface Pending {
  src: Visible;
  readers: Map<Visible, number>; // reader box -> op-level edges into it
  specs: CopySpec[];
  srcLeaf: Leaf;
  parent: Group;
}

/** Place the copies among the visible boxes of `vis` (see the module doc). */
export function layoutCopies(vis: VisibleGraph, copies: Iterable<CopySpec>): CopyLayout {
  const leaves = vis.h.leaves;
  const ids = new Map<Visible, number>();
  vis.boxes.forEach((b, i) => ids.set(b, i));
  const repCache = new Map<string, Visible | null>();
  const rep = (name: string): Visible | null => {
    let r = repCache.get(name);
    if (r === undefined) {
      const l = leaves.get(name);
      r = l ? vis.repOf(l) : null;
      repCache.set(name, r);
    }
    return r;
  };
  const pending = new Map<string, Pending>();
  const diverted = new Set<string>();
  for (const c of copies) {
    const srcLeaf = leaves.get(c.src);
    const src = srcLeaf ? rep(c.src) : null;
    if (!srcLeaf || !src || !ids.has(src)) {
      continue; // its source is not in this graph (a replaced graph, say)
    }
    const readers = new Map<Visible, number>();
    const outside: string[] = [];
    for (const r of c.readers) {
      const b = rep(r);
      if (b && b !== src && ids.has(b)) {
        readers.set(b, (readers.get(b) ?? 0) + 1);
        outside.push(r);
      }
    }
    if (readers.size === 0 && !c.fetch) {
      continue; // internal to one collapsed box
    }
    for (const r of outside) {
      diverted.add(`${c.tensor}>${r}`);
    }
    const targets = [...readers.keys()].map(b => ids.get(b)!);
    targets.sort((a, b) => a - b);
    const key = `${ids.get(src)}>${targets.join(',')}|${c.fetch ? 'f' : ''}|${c.op}|${c.dst_device}`;
    let p = pending.get(key);
    if (!p) {
      let parent = src.parent!;
      for (const b of readers.keys()) {
        parent = commonGroup(parent, b.parent!);
      }
      p = { src, readers: new Map(), specs: [], srcLeaf, parent };
      pending.set(key, p);
    }
    p.specs.push(c);
    for (const [b, n] of readers) {
      p.readers.set(b, (p.readers.get(b) ?? 0) + n);
    }
  }
  const out: CopyLayout = { boxes: [], edges: [], diverted, byName: new Map(), boxOf: new Map() };
  for (const p of pending.values()) {
    const own = p.specs.map(spec => {
      const leaf: Leaf = {
        type: 'leaf',
        key: spec.name,
        short: copyLabel(spec),
        node: copyNode(spec, leaves.get(spec.src) ?? p.srcLeaf),
        parent: p.parent,
        index: 0,
        copy: spec
      };
      out.byName.set(spec.name, leaf);
      return leaf;
    });
    let box = own[0];
    if (own.length > 1) {
      const first = p.specs[0];
      box = {
        ...own[0],
        key: `${first.name} (+${own.length - 1})`,
        short: copyLabel(first, own.length),
        members: own
      };
    }
    for (const spec of p.specs) {
      out.boxOf.set(spec.name, box);
    }
    out.boxes.push(box);
    const first = box.node;
    const [dtype, shape] = first.outputs[0] ?? ['', ''];
    const edge = (from: Visible, to: Visible, count: number): Edge => ({
      id: `c${out.edges.length}`,
      from,
      to,
      control: false,
      count,
      tensor: first.inputs[0] ?? '',
      dtype,
      shape,
      copy: true
    });
    out.edges.push(edge(p.src, box, own.length));
    for (const [b, n] of p.readers) {
      out.edges.push(edge(box, b, n));
    }
  }
  return out;
}

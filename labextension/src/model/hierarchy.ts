/**
 * The name-scope hierarchy of a graph, and which part of it is visible.
 *
 * Ops named `a/b/c` live in scope `a/b`; scopes nest. Among the children of
 * one scope, more than SERIES_MIN siblings with a common base name and a
 * numeric suffix (`Add`, `Add_1`, ... `Add_999`; `layer1`, `layer2`...; scopes too)
 * form one *series* group, as TensorBoard does. An op whose name is also a
 * scope (a variable `w` with `w/read`, `w/Assign`) moves into that scope.
 *
 * Grouped by line (present mode, when the graph is too big to show at its
 * size: features/present/), the root's children made by one statement of a
 * cell (`W = tf.Variable(tf.zeros([64, 10]))` makes `zeros` and the scope `W`)
 * form one *statement* group, labelled by the names the line assigns (`W`) or
 * else by its code: the lesson's steps, each a box the class wrote.
 *
 * A group is either collapsed (one box) or expanded (a cluster holding its
 * children). An expanded group shows at most its `limit` first children;
 * the rest hide behind one "more" box, so no expansion can flood the layout.
 * Everything the layout sees is computed from the visible part only; the
 * hierarchy itself is built once per graph version, linear in its size.
 */

import type { NodeSpec } from '../protocol/graph';
import type { ControlFlowGraph } from '../protocol/loops';
import type { CopySpec } from '../protocol/run';

export const SERIES_MIN = 8; // a series forms from more than this many siblings
export const PAGE = 150; // children an expanded group shows before a "more" box

export interface Leaf {
  type: 'leaf';
  key: string; // the op's full name
  short: string; // last part of the name
  node: NodeSpec;
  parent: Group;
  index: number; // position among the parent's children
  copy?: CopySpec; // a copy node of the run (copies.ts): not in the graph, nor in `leaves`
  members?: Leaf[]; // a box standing for several copies: each of them
}

export interface Group {
  type: 'group';
  kind: 'root' | 'scope' | 'series' | 'statement';
  key: string; // the scope path ("" for the root); a series: "<scope>/<base>_*"; a statement: "#<cell>:<line>"
  short: string; // label
  parent: Group | null;
  children: Item[];
  index: number;
  opCount: number; // ops inside, at any depth
  leaves: Leaf[]; // ops inside, at any depth (filled on build)
  frame?: 'while' | 'cond'; // a scope that is a while loop's frame or a cond (protocol/loops.ts)
  loop?: string; // a loop's frame name ("loop/while_context")
  nested?: boolean; // a loop inside another loop
  code?: string; // a statement's line of code
}

export interface More {
  type: 'more';
  key: string; // "<parent key>/+more"
  parent: Group;
  hidden: number; // children behind it
}

export type Item = Leaf | Group;
export type Visible = Leaf | Group | More;

const SUFFIX = /^(.*?)(_?)(\d+)$/;

export class Hierarchy {
  readonly root: Group;
  readonly leaves = new Map<string, Leaf>(); // op name -> leaf
  readonly groups = new Map<string, Group>(); // group key -> group

  /**
   * The hierarchy of `nodes`; the scopes `cf` names are marked as loop frames and conds;
   * `grouping`: the root's children are grouped by the statement that made them ('lines').
   */
  constructor(nodes: NodeSpec[], cf?: ControlFlowGraph, grouping: Grouping = 'scopes') {
    this.root = newGroup('root', '', '', null);
    for (const node of nodes) {
      if (this.leaves.has(node.name)) {
        continue; // a repeated name: keep the first
      }
      const parts = node.name.split('/');
      let parent = this.root;
      for (let j = 0; j < parts.length - 1; j++) {
        const path = parts.slice(0, j + 1).join('/');
        let g = this.groups.get(path);
        if (!g) {
          g = newGroup('scope', path, parts[j], parent);
          this.groups.set(path, g);
          parent.children.push(g);
        }
        parent = g;
      }
      const leaf: Leaf = {
        type: 'leaf',
        key: node.name,
        short: parts[parts.length - 1],
        node,
        parent,
        index: 0
      };
      this.leaves.set(node.name, leaf);
      parent.children.push(leaf);
    }
    this.mergeOpsIntoScopes();
    if (grouping === 'lines') {
      this.groupBy(grouping);
    }
    this.finish(this.root);
    if (cf) {
      markFrames(this, cf);
    }
  }

  /** A variable `w` beside its scope `w/...`: move the op into the scope. */
  private mergeOpsIntoScopes(): void {
    const touched = new Set<Group>();
    for (const [path, g] of this.groups) {
      const leaf = this.leaves.get(path);
      if (leaf && leaf.parent === g.parent) {
        leaf.parent = g;
        g.children.unshift(leaf);
        touched.add(g.parent!);
      }
    }
    for (const p of touched) {
      p.children = p.children.filter(c => c.parent === p);
    }
  }

  /** Group the root's children by the statement that made them (groups of two or more). */
  private groupBy(grouping: 'lines'): void {
    const root = this.root;
    const byLine = new Map<string, Item[]>();
    const order: (Item | string)[] = [];
    for (const c of root.children) {
      const key = groupKey(firstLeaf(c)?.node, grouping);
      if (key === null || this.groups.has(key)) {
        order.push(c);
        continue;
      }
      let items = byLine.get(key);
      if (!items) {
        byLine.set(key, (items = []));
        order.push(key);
      }
      items.push(c);
    }
    root.children = [];
    for (const o of order) {
      if (typeof o !== 'string') {
        root.children.push(o);
        continue;
      }
      const items = byLine.get(o)!;
      if (items.length < 2) {
        root.children.push(items[0]);
        continue;
      }
      const code = statementCode(firstLeaf(items[0])?.node);
      const g = newGroup('statement', o, statementLabel(code), root);
      g.code = code;
      for (const c of items) {
        c.parent = g;
        g.children.push(c);
      }
      this.groups.set(o, g);
      root.children.push(g);
    }
  }

  /** Form series, set indices and op counts, bottom-up. */
  private finish(g: Group): void {
    if (g.kind !== 'series') {
      this.formSeries(g);
    }
    g.children.forEach((c, i) => (c.index = i));
    for (const c of g.children) {
      if (c.type === 'group') {
        this.finish(c);
        g.opCount += c.opCount;
        for (const l of c.leaves) {
          g.leaves.push(l);
        }
      } else {
        g.opCount += 1;
        g.leaves.push(c);
      }
    }
  }

  private formSeries(g: Group): void {
    if (g.children.length <= SERIES_MIN) {
      return;
    }
    const byBase = new Map<string, { base: string; members: [number, Item][] }>();
    for (const c of g.children) {
      // "Add_12" -> ("Add", "_", 12); "layer3" -> ("layer", "", 3); "Add" -> ("Add", "_", -1)
      const m = SUFFIX.exec(c.short);
      const base = m && m[1] ? m[1] : c.short;
      const sep = m && m[1] ? m[2] : '_';
      const idx = m && m[1] ? Number(m[3]) : -1;
      const k = c.type + '\u0000' + base + '\u0000' + sep;
      let entry = byBase.get(k);
      if (!entry) {
        entry = { base: base + sep, members: [] };
        byBase.set(k, entry);
      }
      entry.members.push([idx, c]);
    }
    const seriesOf = new Map<Item, Group>();
    for (const { base, members } of byBase.values()) {
      if (members.length <= SERIES_MIN || members.every(([i]) => i < 0)) {
        continue;
      }
      let key = (g.key ? g.key + '/' : '') + base + '*';
      while (this.groups.has(key) || this.leaves.has(key)) {
        key += '*';
      }
      members.sort((a, b) => a[0] - b[0]);
      const lo = members[0][0] < 0 ? 0 : members[0][0];
      const hi = members[members.length - 1][0];
      const s = newGroup('series', key, `${base}[${lo}\u2013${hi}]`, g);
      for (const [, c] of members) {
        c.parent = s;
        s.children.push(c);
        seriesOf.set(c, s);
      }
      this.groups.set(key, s);
    }
    if (seriesOf.size === 0) {
      return;
    }
    const out: Item[] = [];
    const placed = new Set<Group>();
    for (const c of g.children) {
      const s = seriesOf.get(c);
      if (!s) {
        out.push(c);
      } else if (!placed.has(s)) {
        placed.add(s);
        out.push(s);
      }
    }
    g.children = out;
  }

  /** Groups from the root's child down to the item's parent. */
  ancestors(item: Item): Group[] {
    const out: Group[] = [];
    for (let p = item.parent; p && p.kind !== 'root'; p = p.parent) {
      out.push(p);
    }
    return out.reverse();
  }
}

/** Mark the groups of `h` that are loop frames (`frame: 'while'`, `loop`: its frame name) or conds. */
function markFrames(h: Hierarchy, cf: ControlFlowGraph): void {
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

/** How the root's children group: by name scope only, or also by the statement that made them. */
export type Grouping = 'scopes' | 'lines';

/** The group an op made by a cell goes to: "#<cell>:<first line of its statement>". */
function groupKey(n: NodeSpec | undefined, grouping: 'lines'): string | null {
  if (!n || n.cell === null || grouping !== 'lines') {
    return null;
  }
  const line = n.stmt ?? n.line;
  return line === null ? null : `#${n.cell}:${line}`;
}

/** The first line of the statement that made an op, stripped. */
function statementCode(n: NodeSpec | undefined): string {
  return (n?.stmt_code ?? n?.code ?? '').trim();
}

/** The first op of an item, in creation order (a group's first child, down). */
function firstLeaf(item: Item): Leaf | undefined {
  let x: Item | undefined = item;
  while (x && x.type === 'group') {
    x = x.children[0];
  }
  return x;
}

const ASSIGNED = /^([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=(?!=)/;
const LABEL_CHARS = 28;

/**
 * A statement's label: the names its line assigns, else its code, shortened.
 *
 *     statementLabel('W = tf.Variable(tf.zeros([64, 10]))')  // 'W'
 *     statementLabel('_, loss = sess.run(...)')              // 'loss'
 */
export function statementLabel(code: string): string {
  const m = ASSIGNED.exec(code);
  const names = m ? m[1].split(',').map(s => s.trim()).filter(s => s !== '_') : [];
  const text = names.length > 0 ? names.join(', ') : code;
  return text.length > LABEL_CHARS ? text.slice(0, LABEL_CHARS - 1) + '\u2026' : text || 'statement';
}

function newGroup(kind: Group['kind'], key: string, short: string, parent: Group | null): Group {
  return { type: 'group', kind, key, short, parent, children: [], index: 0, opCount: 0, leaves: [] };
}

/** The expansion state the view keeps (by key, so it survives graph updates). */
export interface Expansion {
  isExpanded(g: Group): boolean;
  limit(g: Group): number;
}

/** The visible part: boxes (leaves, collapsed groups, "more"), clusters (expanded groups). */
export class VisibleGraph {
  readonly boxes: Visible[] = [];
  readonly clusters: Group[] = []; // expanded groups, parents before children
  private readonly mores = new Map<Group, More>();

  constructor(
    readonly h: Hierarchy,
    readonly ex: Expansion
  ) {
    this.walk(h.root);
  }

  private walk(g: Group): void {
    const limit = this.ex.limit(g);
    g.children.forEach((c, i) => {
      if (i >= limit) {
        return;
      }
      if (c.type === 'group' && this.ex.isExpanded(c)) {
        this.clusters.push(c);
        this.walk(c);
      } else {
        this.boxes.push(c);
      }
    });
    if (g.children.length > limit) {
      const more: More = {
        type: 'more',
        key: (g.key ? g.key + '/' : '') + '+more',
        parent: g,
        hidden: g.children.length - limit
      };
      this.mores.set(g, more);
      this.boxes.push(more);
    }
  }

  /** The visible box that stands for an op or group (itself, a collapsed ancestor or a "more"). */
  repOf(item: Item): Visible {
    const chain: Item[] = [];
    for (let x: Item | null = item; x && x.parent; x = x.parent) {
      chain.push(x);
    }
    for (let i = chain.length - 1; i >= 0; i--) {
      const it = chain[i];
      const p = it.parent!;
      if (it.index >= this.ex.limit(p)) {
        return this.mores.get(p)!;
      }
      if (it.type === 'group' && !this.ex.isExpanded(it)) {
        return it;
      }
    }
    return item;
  }
}

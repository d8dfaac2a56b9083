/**
 * Layout of the visible graph with Graphviz `dot` (compiled to WebAssembly,
 * @viz-js/viz). We hand dot only ids and box sizes (never names, so no
 * escaping questions), and read back centres, cluster boxes and edge splines
 * from its "json0" output, in pixels with y growing downwards.
 *
 * Edges: every data input and control input of every op is mapped to the
 * visible boxes standing for its two ends; edges inside one box vanish, and
 * parallel edges between two boxes merge into one with a count. Edges that a
 * run routes through a copy node (copies.ts) are left to the copy's own.
 */

import type { Group, Item, Leaf, Visible, VisibleGraph } from '../model/hierarchy';

/** What dot lays out: the visible boxes (copy nodes included) and the expanded groups. */
export interface LayoutInput {
  boxes: Visible[];
  clusters: Group[]; // parents before children
}

export interface Size {
  w: number;
  h: number;
}

export interface Edge {
  id: string; // "e<index>"
  from: Visible;
  to: Visible;
  control: boolean;
  count: number; // op-level edges merged into it
  tensor: string; // the first tensor it carries ("" for control edges)
  dtype: string;
  shape: string;
  copy?: boolean; // into or out of a copy node
}

export interface Point {
  x: number;
  y: number;
}

export interface Placed {
  x: number; // centre
  y: number;
  w: number;
  h: number;
}

export interface ClusterBox {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export interface Layout {
  width: number;
  height: number;
  boxes: Map<Visible, Placed>;
  clusters: Map<Group, ClusterBox>;
  edges: Map<Edge, { points: Point[]; end: Point | null }>;
}

/**
 * Merge the op-level edges into edges between visible boxes. `diverted` holds
 * "<tensor>><reader>" for the data edges that go through a copy node instead.
 */
export function visibleEdges(vis: VisibleGraph, diverted: ReadonlySet<string> = new Set()): Edge[] {
  const out = new Map<string, Edge>();
  const ids = new Map<Visible, number>();
  vis.boxes.forEach((b, i) => ids.set(b, i));
  const repCache = new Map<Leaf, Visible>();
  const rep = (l: Leaf): Visible => {
    let r = repCache.get(l);
    if (!r) {
      r = vis.repOf(l);
      repCache.set(l, r);
    }
    return r;
  };
  const add = (src: Leaf, dst: Leaf, control: boolean, tensor: string, outIndex: number) => {
    const a = rep(src);
    const b = rep(dst);
    if (a === b) {
      return;
    }
    const key = `${ids.get(a)}>${ids.get(b)}${control ? 'c' : 'd'}`;
    const e = out.get(key);
    if (e) {
      e.count += 1;
      return;
    }
    const spec = src.node.outputs[outIndex] ?? ['', ''];
    out.set(key, {
      id: `e${out.size}`,
      from: a,
      to: b,
      control,
      count: 1,
      tensor,
      dtype: control ? '' : spec[0],
      shape: control ? '' : spec[1]
    });
  };
  for (const dst of vis.h.leaves.values()) {
    for (const t of dst.node.inputs) {
      const colon = t.lastIndexOf(':');
      const name = colon > 0 ? t.slice(0, colon) : t;
      const src = vis.h.leaves.get(name);
      if (src && !(diverted.size > 0 && diverted.has(`${t}>${dst.key}`))) {
        add(src, dst, false, t, colon > 0 ? Number(t.slice(colon + 1)) || 0 : 0);
      }
    }
    for (const c of dst.node.control) {
      const src = vis.h.leaves.get(c.startsWith('^') ? c.slice(1) : c);
      if (src) {
        add(src, dst, true, '', 0);
      }
    }
  }
  return [...out.values()];
}

/** The DOT text for the visible graph; ids are "n<i>" for boxes and "cluster_<i>". */
export function toDot(
  vis: LayoutInput,
  edges: Edge[],
  sizeOf: (v: Visible) => Size,
  titleWidth: (g: Group) => number = () => 0,
  opts: { titleH: number; ranksep: number; nodesep: number } = { titleH: 16, ranksep: 0.42, nodesep: 0.28 }
): string {
  const boxId = new Map<Visible, string>();
  vis.boxes.forEach((b, i) => boxId.set(b, `n${i}`));
  const big = vis.boxes.length > 400;
  const lines: string[] = [
    'digraph G {',
    `graph [rankdir=TB nodesep=${opts.nodesep} ranksep=${opts.ranksep} margin=0 fontsize=14 labeljust=l${
      big ? ' mclimit=0.3 nslimit=2 nslimit1=2 searchsize=10' : ''
    }];`,
    'node [shape=box fixedsize=true label=""];',
    'edge [arrowsize=0.6];'
  ];
  // children of each expanded group, in order, as boxes or nested clusters
  const clusterId = new Map<Group, string>();
  vis.clusters.forEach((g, i) => clusterId.set(g, `cluster_${i}`));
  const inside = new Map<Group | null, (Visible | Group)[]>();
  const place = (parent: Group, x: Visible | Group) => {
    const p = parent.kind === 'root' ? null : parent;
    let list = inside.get(p);
    if (!list) {
      list = [];
      inside.set(p, list);
    }
    list.push(x);
  };
  for (const g of vis.clusters) {
    place(g.parent!, g);
  }
  for (const b of vis.boxes) {
    place(b.parent!, b);
  }
  const emit = (g: Group | null, indent: string) => {
    for (const x of inside.get(g) ?? []) {
      if (x.type === 'group' && clusterId.has(x)) {
        lines.push(`${indent}subgraph ${clusterId.get(x)} {`);
        // an empty fixed-size table: the cluster is at least as wide as its title, which
        // the view draws itself (no text measured by Graphviz)
        const w = Math.max(8, Math.round(titleWidth(x)));
        lines.push(
          `${indent} graph [label=<<TABLE BORDER="0" CELLPADDING="0" CELLSPACING="0" FIXEDSIZE="TRUE" WIDTH="${w}" HEIGHT="${opts.titleH}"><TR><TD></TD></TR></TABLE>> margin=10];`
        );
        emit(x, indent + ' ');
        lines.push(`${indent}}`);
      } else {
        const s = sizeOf(x);
        lines.push(`${indent}${boxId.get(x)} [width=${(s.w / 72).toFixed(3)} height=${(s.h / 72).toFixed(3)}];`);
      }
    }
  };
  emit(null, '');
  for (const e of edges) {
    const attrs = [`id=${e.id}`];
    const weight = Math.max(Math.min(e.count, 20), e.copy ? 2 : 1); // keep src -> copy -> reader straight
    if (weight > 1) {
      attrs.push(`weight=${weight}`);
    }
    if (e.control) {
      attrs.push('style=dashed');
    }
    lines.push(`${boxId.get(e.from)} -> ${boxId.get(e.to)} [${attrs.join(' ')}];`);
  }
  lines.push('}');
  return lines.join('\n');
}

interface JsonObject {
  _gvid: number;
  name: string;
  pos?: string;
  width?: string;
  height?: string;
  bb?: string;
}

interface JsonEdge {
  id?: string;
  pos?: string;
}

interface JsonGraph {
  bb?: string;
  objects?: JsonObject[];
  edges?: JsonEdge[];
}

/** Read dot's json0 output (rendered with yInvert) back onto our boxes and edges. */
export function readLayout(vis: LayoutInput, edges: Edge[], json: JsonGraph): Layout {
  const bb = (json.bb ?? '0,0,0,0').split(',').map(Number);
  const layout: Layout = {
    width: bb[2] - bb[0],
    height: Math.abs(bb[3] - bb[1]),
    boxes: new Map(),
    clusters: new Map(),
    edges: new Map()
  };
  const ox = bb[0];
  const oy = Math.min(bb[1], bb[3]);
  for (const o of json.objects ?? []) {
    if (o.name.startsWith('cluster_')) {
      const g = vis.clusters[Number(o.name.slice(8))];
      const [x1, y1, x2, y2] = (o.bb ?? '0,0,0,0').split(',').map(Number);
      if (g) {
        layout.clusters.set(g, {
          x1: x1 - ox,
          y1: Math.min(y1, y2) - oy,
          x2: x2 - ox,
          y2: Math.max(y1, y2) - oy
        });
      }
    } else if (o.name.startsWith('n') && o.pos) {
      const b = vis.boxes[Number(o.name.slice(1))];
      const [x, y] = o.pos.split(',').map(Number);
      if (b) {
        layout.boxes.set(b, {
          x: x - ox,
          y: y - oy,
          w: Number(o.width) * 72,
          h: Number(o.height) * 72
        });
      }
    }
  }
  const byId = new Map(edges.map(e => [e.id, e]));
  for (const je of json.edges ?? []) {
    const e = je.id ? byId.get(je.id) : undefined;
    if (!e || !je.pos) {
      continue;
    }
    let end: Point | null = null;
    const points: Point[] = [];
    for (const tok of je.pos.split(' ')) {
      if (tok.startsWith('e,')) {
        const [x, y] = tok.slice(2).split(',').map(Number);
        end = { x: x - ox, y: y - oy };
      } else if (tok.startsWith('s,')) {
        continue;
      } else {
        const [x, y] = tok.split(',').map(Number);
        points.push({ x: x - ox, y: y - oy });
      }
    }
    layout.edges.set(e, { points, end });
  }
  return layout;
}

/** A label for an item (what its box says first). */
export function itemLabel(x: Visible | Item): string {
  if (x.type === 'more') {
    return `+${x.hidden} more`;
  }
  return x.short || x.key || '(root)';
}

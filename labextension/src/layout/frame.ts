/**
 * One layout pass: the part of the hierarchy that is open (hierarchy.ts),
 * the copy nodes of the runs shown beside it (copies.ts), the edges between
 * them, and where Graphviz puts it all (dot.ts). The view draws the Frame
 * a pass returns (scene.ts) and keeps it until the next one.
 *
 * Passes are requested through a LayoutQueue: one runs on the next tick,
 * once the layout engine has loaded (viz.ts), and the latest request wins.
 *
 *     queue.request()  // ... layOut -> drawn(frame) -> data-flowbook-layouts

 */

import type { Viz } from '@viz-js/viz';
import { VisibleGraph, type Expansion, type Hierarchy, type Visible } from '../model/hierarchy';
import { readLayout, toDot, visibleEdges, type Edge, type Layout, type LayoutInput } from './dot';
import { clusterTitleWidth, sizeOf } from '../paint/draw';
import type { TextStyle } from '../paint/text';
import { EMPTY_COPIES, layoutCopies, type CopyLayout, type CopySet } from './copies';
import { getViz } from './viz';

export interface Frame {
  vis: VisibleGraph;
  boxes: Visible[]; // laid out: the visible graph's boxes, then the copy boxes
  copies: CopyLayout;
  edges: Edge[];
  layout: Layout | null; // null when nothing is visible
  style: TextStyle; // the type sizes the boxes were measured with (normal or present)
}

/** A pass: its frame, and when (performance.now()) it started, had the visible part, had Graphviz's layout. */
export interface Pass {
  frame: Frame;
  startedAt: number;
  visibleAt: number;
  dotAt: number;
}

/** Lay out what `expansion` opens of `h`, with the copy nodes of `copySet`, text in `style`. */
export function layOut(
  viz: Viz,
  h: Hierarchy,
  expansion: Expansion,
  copySet: CopySet,
  style: TextStyle
): Pass | { error: string } {
  const startedAt = performance.now();
  const vis = new VisibleGraph(h, expansion);
  const copies = copySet.size > 0 ? layoutCopies(vis, copySet.values()) : EMPTY_COPIES;
  const edges = visibleEdges(vis, copies.diverted);
  for (const e of copies.edges) {
    e.id = `e${edges.length}`;
    edges.push(e);
  }
  const input: LayoutInput = {
    boxes: copies.boxes.length > 0 ? [...vis.boxes, ...copies.boxes] : vis.boxes,
    clusters: vis.clusters
  };
  const visibleAt = performance.now();
  let layout: Layout | null = null;
  if (vis.boxes.length > 0) {
    const dot = toDot(
      input,
      edges,
      v => sizeOf(v, style),
      g => clusterTitleWidth(g, style),
      { titleH: style.headH - 6, ranksep: style.ranksep, nodesep: style.nodesep }
    );
    const result = viz.render(dot, { format: 'json0', yInvert: true });
    if (result.status !== 'success' || !result.output) {
      return { error: result.errors.map(e => e.message).join('; ') };
    }
    layout = readLayout(input, edges, JSON.parse(result.output));
  }
  const dotAt = performance.now();
  return { frame: { vis, boxes: input.boxes, copies, edges, layout, style }, startedAt, visibleAt, dotAt };
}

/**
 * What a pass requested at `requestedAt` and drawn at `drawnAt` spent (ms):
 * waiting, on the visible part, in Graphviz, drawing; and what it laid out.
 */
export function passTiming(pass: Pass, requestedAt: number, drawnAt: number): string {
  const { frame } = pass;
  return JSON.stringify({
    wait: Math.round(pass.startedAt - requestedAt),
    visible: Math.round(pass.visibleAt - pass.startedAt),
    dot: Math.round(pass.dotAt - pass.visibleAt),
    draw: Math.round(drawnAt - pass.dotAt),
    boxes: frame.boxes.length,
    copies: frame.copies.boxes.length,
    edges: frame.edges.length
  });
}

/** What a pass lays out: the hierarchy, what is open of it, the copy nodes, the type sizes; and the graph's version. */
export interface LayoutRequest {
  h: Hierarchy;
  expansion: Expansion;
  copies: CopySet;
  style: TextStyle;
  version: number;
}

/**
 * Runs layout passes on the next tick; only the latest request runs, and
 * none after `dispose`. Each pass lays out what `what()` says then, hands
 * its frame to `drawn`, and writes what it did on `root`'s data attributes
 * (data-flowbook-layouts counts the passes: tests check that runs do not lay
 * out again; -layout-ms, -timing, -version). What failed goes to `failed`.
 */
export class LayoutQueue {
  private token = 0; // the newest request
  private disposed = false;
  private layouts = 0; // passes drawn

  constructor(
    private readonly root: HTMLElement,
    private readonly what: () => LayoutRequest,
    private readonly drawn: (frame: Frame) => void,
    private readonly failed: (message: string) => void
  ) {}

  /** Lay out again (soon: the latest request wins). */
  request(): void {
    const token = ++this.token;
    const requestedAt = performance.now();
    window.setTimeout(() => {
      getViz().then(
        viz => {
          if (token === this.token && !this.disposed) {
            this.run(viz, requestedAt);
          }
        },
        err => this.failed(`Could not load the layout engine: ${String(err)}`)
      );
    }, 0);
  }

  dispose(): void {
    this.disposed = true;
    this.token++;
  }

  private run(viz: Viz, requestedAt: number): void {
    const r = this.what();
    const pass = layOut(viz, r.h, r.expansion, r.copies, r.style);
    if ('error' in pass) {
      this.failed(`Layout failed: ${pass.error}`);
      return;
    }
    this.drawn(pass.frame);
    const drawnAt = performance.now();
    const data = this.root.dataset;
    data.flowbookLayoutMs = (drawnAt - requestedAt).toFixed(1);
    data.flowbookLayouts = String(++this.layouts);
    data.flowbookTiming = passTiming(pass, requestedAt, drawnAt);
    data.flowbookVersion = String(r.version);
  }
}

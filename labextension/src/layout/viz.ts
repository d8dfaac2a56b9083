/**
 * One Graphviz (WebAssembly) instance per page, created on first use. The
 * module (1 MB of inlined WebAssembly) is imported lazily, so JupyterLab
 * loads it only once a graph is shown.
 */

import type { Viz } from '@viz-js/viz';

let viz: Promise<Viz> | null = null;

export function getViz(): Promise<Viz> {
  if (!viz) {
    viz = import('@viz-js/viz').then(m => m.instance());
    viz.catch(() => {
      viz = null; // let a later layout try again
    });
  }
  return viz;
}

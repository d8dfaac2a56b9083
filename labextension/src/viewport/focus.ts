/**
 * Focus: where the view looks, after a relayout and on request.
 *
 * State it owns: the `camera` (camera.ts), and what the next layout should
 * show: a new graph (or everything collapsed) is fitted, once the viewport
 * has a size; a group opened or closed by a click stays where it was on
 * screen (the anchor); a search match, a link followed or the stepper's op
 * is centred (the target); the ops a cell just made are centred together
 * (the cell followed, follow.ts).
 *
 * Until the user pans or zooms, the view stays framed: a resize of the
 * viewport (the side panel opening or closing beside the notebook, a window
 * resized) and a new layout frame it again. Framed means the whole graph
 * when it fits at a readable scale; else the ops of the cell run last (the
 * cell followed, or the ops with the newest execution count), as big as
 * fits. Before either, the view may fold the graph to fit (present mode
 * groups it by line of code: features/present/). "Fit" fits the whole
 * graph, at any scale.
 */

import { Camera, type Bounds } from './camera';
import type { Group, Hierarchy, Visible } from '../model/hierarchy';
import { CellFollower } from '../features/follow/follow';
import type { Scene } from '../paint/scene';

/** A point of the graph kept at its place on screen across a relayout. */
interface Anchor {
  key: string; // the box or cluster's key
  sx: number; // screen position inside the viewport
  sy: number;
}

/**
 * What focus asks of the view: the box standing for a name, the group with a
 * key, and a smaller drawing of the graph when it does not fit whole
 * (true: a layout of it follows, which is framed).
 */
export interface FocusHost {
  boxFor(name: string): Visible | undefined;
  groupOf(key: string): Group | undefined;
  foldToFit(): boolean;
}

export class Focus {
  readonly camera: Camera;
  private anchor: Anchor | null = null;
  private target: string[] = []; // names centred (together) after the next layout
  private readonly follower = new CellFollower(); // the cell whose new ops are centred
  private recent: string[] = []; // the ops of the cell run last: framed when the whole graph is too big to read
  private readonly resizeObserver: ResizeObserver | null;

  constructor(
    viewport: HTMLElement,
    private readonly scene: Scene,
    private readonly host: FocusHost
  ) {
    this.camera = new Camera(scene.svg, scene.el, viewport);
    this.resizeObserver =
      typeof ResizeObserver === 'undefined'
        ? null
        : new ResizeObserver(() => {
            if ((this.camera.needsFit || !this.camera.moved) && this.scene.layout && viewport.clientWidth > 0) {
              this.frame();
            }
          });
    this.resizeObserver?.observe(viewport);
  }

  /** Fit the next layout in view. */
  fitNext(): void {
    this.camera.needsFit = true;
  }

  /** Fit the whole graph in view (`readable`: not below a legible scale; then show its top). */
  fit(readable = false): void {
    const l = this.scene.layout;
    if (l) {
      this.camera.fit(l.width, l.height, readable);
    } else {
      this.camera.needsFit = true;
    }
  }

  /** Keep the box or cluster with key `key` where it is on screen now across the next layout. */
  hold(key: string): void {
    const pt = this.scene.anchorPoint(key, this.host.groupOf(key));
    if (pt) {
      this.anchor = { key, ...this.camera.toScreen(pt.x, pt.y) };
    }
  }

  /** Center `name` (or the middle of several) once the next layout is drawn. */
  centerNext(name: string | string[] | null): void {
    this.target = name === null ? [] : typeof name === 'string' ? [name] : name;
  }

  /** Centre the ops the cell with model id `cellId` makes, once the kernel sends them. */
  followCell(cellId: string): void {
    this.follower.follow(cellId);
  }

  /**
   * A graph came: note the ops of the cell run last (framed when the whole
   * graph is too big to read). Ops of the cell followed that changed are
   * revealed if few (`reveal` opens what hides them, and closes what it
   * opened for the cell before); where the user moved the view, they are
   * centred after the next layout.
   */
  centerFollowed(h: Hierarchy, reveal: (names: string[]) => void): void {
    const ops = this.follower.newOps(h);
    if (ops) {
      reveal(ops.reveal);
      if (this.camera.moved) {
        this.centerNext(ops.names);
      }
    }
    this.recent = ops?.names ?? latestOps(h);
  }

  /** A layout was drawn: frame it, or keep the anchor in place, or keep the view; then center the target. */
  drawn(): void {
    const anchor = this.anchor;
    this.anchor = null;
    const target = this.target;
    this.target = [];
    if (this.camera.needsFit || (!this.camera.moved && !anchor)) {
      this.frame();
    } else if (anchor && this.keep(anchor)) {
      // done
    } else {
      this.camera.apply();
    }
    if (target.length > 0) {
      this.centerOnAll(target);
    }
  }

  /**
   * The whole graph if it fits at `minWhole` or more; else the ops of the
   * cell run last, readable (and zoomed in no further than 1: some context
   * around them); else the whole graph's top left, readable.
   */
  frame(): void {
    const l = this.scene.layout;
    if (!l) {
      this.camera.needsFit = true;
      return;
    }
    const cam = this.camera;
    const whole = { x1: 0, y1: 0, x2: l.width, y2: l.height };
    const fits = cam.fitScale(l.width, l.height) >= cam.minWhole;
    if (!fits && this.host.foldToFit()) {
      cam.needsFit = true; // the folded layout comes next, and is framed
      return;
    }
    const part = fits || !cam.framesCell ? null : this.boundsOf(this.recent);
    if (fits) {
      cam.fitBox(whole, cam.minWhole);
    } else if (part) {
      cam.fitBox(part, cam.minFit, Math.max(1, cam.minFit));
    } else {
      cam.fitBox(whole, cam.minFit);
    }
    // what a test (or a curious reader of the page) can check: what was framed, in a layout how big
    const data = this.scene.svg.closest<HTMLElement>('.flowbook-graph')?.dataset;
    if (data) {
      data.flowbookFramed = part ? `cell:${this.recent.length}` : 'whole';
      data.flowbookLayoutSize = `${Math.round(l.width)}x${Math.round(l.height)}`;
    }
  }

  /** The rectangle around the boxes standing for `names` (those drawn); null for none. */
  private boundsOf(names: string[]): Bounds | null {
    const ps = [...new Set(names.map(n => this.host.boxFor(n)))].map(v => this.scene.placed(v)).filter(p => p !== undefined);
    if (ps.length === 0) {
      return null;
    }
    return {
      x1: Math.min(...ps.map(p => p.x - p.w / 2)),
      y1: Math.min(...ps.map(p => p.y - p.h / 2)),
      x2: Math.max(...ps.map(p => p.x + p.w / 2)),
      y2: Math.max(...ps.map(p => p.y + p.h / 2))
    };
  }

  private keep(a: Anchor): boolean {
    const pt = this.scene.anchorPoint(a.key, this.host.groupOf(a.key));
    if (!pt) {
      return false;
    }
    this.camera.pin(pt.x, pt.y, a.sx, a.sy);
    return true;
  }

  /** Center the box standing for an op or group; zoom in if the view is far out. */
  centerOn(name: string): void {
    const p = this.scene.placed(this.host.boxFor(name));
    if (p) {
      this.camera.centerOn(p.x, p.y);
    }
  }

  /** Center the middle of the boxes standing for `names` (those drawn). */
  centerOnAll(names: string[]): void {
    const ps = names.map(n => this.scene.placed(this.host.boxFor(n))).filter(p => p !== undefined);
    if (ps.length > 0) {
      const x1 = Math.min(...ps.map(p => p.x));
      const x2 = Math.max(...ps.map(p => p.x));
      const y1 = Math.min(...ps.map(p => p.y));
      const y2 = Math.max(...ps.map(p => p.y));
      this.camera.centerOn((x1 + x2) / 2, (y1 + y2) / 2);
    }
  }

  /** Center the box standing for an op if it is off screen. */
  showIfOffscreen(name: string): void {
    const p = this.scene.placed(this.host.boxFor(name));
    if (p && this.camera.isOffscreen(p.x, p.y)) {
      this.camera.centerOn(p.x, p.y);
    }
  }

  dispose(): void {
    this.resizeObserver?.disconnect();
  }
}

/** The ops made by the cell run last: those with the newest execution count (none recorded: none). */
function latestOps(h: Hierarchy): string[] {
  let newest = -1;
  for (const leaf of h.leaves.values()) {
    newest = Math.max(newest, leaf.node.count ?? -1);
  }
  const names: string[] = [];
  if (newest >= 0) {
    for (const leaf of h.leaves.values()) {
      if (leaf.node.count === newest) {
        names.push(leaf.key);
      }
    }
  }
  return names;
}

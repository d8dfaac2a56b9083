/**
 * Shown: what a view shows now, and the lookups from a name to what stands
 * for it on screen.
 *
 * State it owns:
 * - `graph`, `overlay` (run + stepper, overlay.ts): the last state the host sent;
 *   `updates` (updates.ts): the newest state of each kind, so late ones are dropped
 * - `h`: the name-scope hierarchy of `graph` as written or as optimised
 *   (the `hierarchyOf` it is given: features/rewrites/), grouped by line of code
 *   or cell (`grouping`), rebuilt when the graph or either choice changes
 * - `openings` (openings.ts): what is open, by group key (op names are
 *   stable across cell re-runs, so this survives graph updates)
 * - `copies`: the copy nodes of the runs shown (by name, readers merged over
 *   runs), laid out beside the graph's boxes (copies.ts); a run relayouts
 *   only when it brings a new copy (a CPU-only run clears them)
 * - `frame` (frame.ts): what is laid out now
 * - `selected`: the op, copy or group in the details pane (details.ts)
 *
 * A name is an op of the graph, a copy node, or the key of a drawn box (a
 * group's, or a box standing for several copies); `drawn` finds the box
 * drawn with a key (scene.ts).
 */

import { Hierarchy, type Group, type Grouping, type Leaf, type Visible } from '../model/hierarchy';
import { Openings } from '../model/openings';
import { Overlay } from '../model/overlay';
import { CopySet, EMPTY_COPIES, type CopyLayout } from '../layout/copies';
import type { Frame, LayoutRequest } from '../layout/frame';
import type { TextStyle } from '../paint/text';
import { normalizeGraph, type GraphState } from '../protocol/graph';
import { EMPTY_RUN, type RunState } from '../protocol/run';
import { EMPTY_STEPPER, normalizeStepper, type StepperState } from '../protocol/stepper';
import { Updates } from '../protocol/updates';

/** What a graph from the host changed: nothing (it came late), the graph, or to another graph. */
export type GraphChange = 'stale' | 'updated' | 'another';

export class Shown {
  graph: GraphState = normalizeGraph(null);
  h = new Hierarchy([]);
  readonly overlay = new Overlay(EMPTY_RUN, EMPTY_STEPPER);
  readonly openings = new Openings();
  readonly copies = new CopySet();
  readonly updates = new Updates();
  frame: Frame | null = null;
  selected = ''; // op name or group key shown in the details pane
  grouping: Grouping = 'scopes'; // the root's children grouped by line or cell (present mode, to fit)

  constructor(
    private readonly hierarchyOf: (g: GraphState, grouping: Grouping) => Hierarchy,
    private readonly drawn: (key: string) => Visible | undefined
  ) {}

  /** A graph state from the host. */
  setGraph(g: unknown): GraphChange {
    if (!this.updates.fresh('graph', g)) {
      return 'stale';
    }
    const graph = normalizeGraph(g);
    const another = graph.id !== this.graph.id;
    this.graph = graph;
    this.rebuild();
    if (another) {
      this.copies.clear(); // another graph: the copies seen were between its ops
      this.copies.fold(this.overlay.run, this.overlay.stepper); // those of the run it came with
    }
    return another ? 'another' : 'updated';
  }

  /** Build the hierarchy again (the graph, or the choice between as written and as optimised, changed). */
  rebuild(): void {
    this.h = this.hierarchyOf(this.graph, this.grouping);
    this.openings.setHierarchy(this.h);
  }

  /** Show `run`; true when it brought copy nodes to lay out. */
  setRun(run: RunState): boolean {
    this.overlay.setRun(run);
    return this.foldCopies();
  }

  /** A stepper state from the host; null when it came late. */
  setStepper(s: unknown): StepperState | null {
    if (!this.updates.fresh('stepper', s)) {
      return null;
    }
    const st = normalizeStepper(s);
    this.overlay.setStepper(st);
    return st;
  }

  /** Fold in the copies of the run and the stepper's plan shown; true when the set to lay out changed. */
  foldCopies(): boolean {
    return this.copies.fold(this.overlay.run, this.overlay.stepper);
  }

  /** What the next layout pass lays out, with text in `style`. */
  layoutRequest(style: TextStyle): LayoutRequest {
    return { h: this.h, expansion: this.openings, copies: this.copies, style, version: this.graph.version };
  }

  // ------------------------------------------------------------- lookups
  get copyLayout(): CopyLayout {
    return this.frame?.copies ?? EMPTY_COPIES;
  }

  /** An op of the graph or a copy node drawn (something a stepper can run to). */
  isOp(name: string): boolean {
    return this.h.leaves.has(name) || this.copyLayout.byName.has(name);
  }

  /** The box standing for an op (or a copy node, or a group key) in the current layout. */
  boxFor(name: string): Visible | undefined {
    const leaf = this.h.leaves.get(name);
    if (leaf) {
      return this.frame ? this.frame.vis.repOf(leaf) : undefined;
    }
    return this.drawn(name) ?? this.copyLayout.boxOf.get(name);
  }

  /** The key of the box standing for an op now (a collapsed scope's, when it is inside). */
  keyOf(name: string): string | undefined {
    return this.boxFor(name)?.key;
  }

  /** The drawn box of the selection (a box, or the box standing for a selected copy). */
  selectedBox(): Visible | undefined {
    return this.drawn(this.selected) ?? this.copyLayout.boxOf.get(this.selected);
  }

  /** What a click on `name` selects to the host: an op, a copy node, or a box standing for several copies. */
  selectable(name: string): Leaf | undefined {
    return this.h.leaves.get(name) ?? this.copyLayout.byName.get(name) ?? this.copyBox(name);
  }

  /** What the details pane shows for the selection: an op, a group, a copy node or a box of copies. */
  subject(): Leaf | Group | undefined {
    const name = this.selected;
    return this.h.leaves.get(name) ?? this.h.groups.get(name) ?? this.copyLayout.byName.get(name) ?? this.copyBox(name);
  }

  /** The names search looks through: the ops, then the copy nodes. */
  *searchable(): Iterable<string> {
    yield* this.h.leaves.keys();
    yield* this.copies.names();
  }

  /** A drawn box standing for several copies, by its key. */
  private copyBox(key: string): Leaf | undefined {
    const v = this.drawn(key);
    return v && v.type === 'leaf' && v.copy ? v : undefined;
  }

  // ------------------------------------------------------------- opening
  /**
   * Open every group hiding an op (and page it into view); true if anything changed.
   * A copy node is revealed with the op whose value it copies (a copy inside a collapsed
   * scope is drawn once that scope is open).
   */
  reveal(name: string): boolean {
    const copy = this.copies.get(name);
    const leaf = this.h.leaves.get(copy ? copy.src : name);
    return leaf ? this.openings.reveal(leaf) : false;
  }

  /** Open the scopes hiding the ops of the cell followed (those of the cell before close). */
  revealFollowed(names: string[]): void {
    this.openings.revealFollowed(names.map(n => this.h.leaves.get(n)).filter(l => l !== undefined));
  }

  /** Open the scopes hiding the stepper's current op; true if anything opened. */
  revealStepCurrent(): boolean {
    const st = this.overlay.stepper;
    return st.active && st.current ? this.reveal(st.current) : false;
  }
}

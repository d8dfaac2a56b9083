/**
 * Present mode: the graph for a projector. It owns `on` and applies the
 * mode to the parts it changes: the root's class (present.css), the
 * toolbar's button, the openings (small graphs start from their scopes,
 * openings.ts), and the camera (fits never below scale 1, where every text
 * is at least 16 px, with a narrow margin; a fit wider than the view shows
 * its middle, camera.ts).
 * The type sizes are text.ts's PRESENT, which `style` hands to the layout.
 *
 * A graph too big to show whole at that size folds, a step at a time, each
 * step laid out and fitted before the next is tried (`foldMore`): first what
 * is open closes (a loop the stepper opened, a scope a search revealed), then
 * the root's ops group by the line of code that made them (hierarchy.ts), then
 * rows close up and edges drop their shape labels (PRESENT_TIGHT). (Grouping
 * by cell was tried: a tutorial that builds its model in one cell became one
 * box.) The
 * folding holds until the graph is another one or the mode is switched.
 * A graph still too big frames the ops of the cell run last, at scale 1,
 * as the normal mode does at its own scale (focus.ts).
 *
 *     if (presentation.set(true)) { relayout(); }
 */

import { FIT_PAD, MIN_READABLE, MIN_WHOLE, type Camera } from '../../viewport/camera';
import type { Grouping } from '../../model/hierarchy';
import type { Openings } from '../../model/openings';
import { NORMAL, PRESENT, PRESENT_TIGHT, type TextStyle } from '../../paint/text';

export const FOLDS = 3; // the steps a graph too big for present mode folds by
const PRESENT_PAD = 14; // px kept free around a graph fitted in present mode (the pills on a box's top edge stick out 12)

/** The toolbar's Present button, pressed or not. */
export interface PresentButton {
  setPresent(on: boolean): void;
}

export class Presentation {
  on = false; // present mode is on
  fold = 0; // 0: as it is; 1: what is open closes; 2: grouped by line of code; 3: also tight

  constructor(
    private readonly root: HTMLElement,
    private readonly toolbar: PresentButton,
    private readonly openings: Openings,
    private readonly camera: Camera
  ) {}

  /** The type sizes to lay out with. */
  get style(): TextStyle {
    return !this.on ? NORMAL : this.fold >= 3 ? PRESENT_TIGHT : PRESENT;
  }

  /** How the graph's root groups at this fold. */
  get grouping(): Grouping {
    return this.fold < 2 ? 'scopes' : 'lines';
  }

  /** Fold a step further (present mode only); false when there is no step left. */
  foldMore(): boolean {
    if (!this.on || this.fold >= FOLDS) {
      return false;
    }
    this.fold += 1;
    this.root.dataset.flowbookFold = String(this.fold);
    if (this.fold === 1) {
      this.openings.collapseAll(); // a loop the stepper opened, a scope a search revealed
    }
    return true;
  }

  /** Unfold (the graph is another one, or the mode switched). */
  unfold(): void {
    this.fold = 0;
    this.root.dataset.flowbookFold = '0';
  }

  /** Turn present mode on or off; true if it changed (then the view lays out again, fitted). */
  set(on: boolean): boolean {
    if (on === this.on) {
      return false;
    }
    this.on = on;
    this.root.classList.toggle('fb-present', on);
    this.root.dataset.flowbookPresent = String(on);
    this.toolbar.setPresent(on);
    this.openings.compact = on;
    this.camera.minFit = on ? 1 : MIN_READABLE;
    this.camera.centreWide = on;
    this.camera.minWhole = on ? 1 : MIN_WHOLE;
    this.camera.pad = on ? PRESENT_PAD : FIT_PAD;
    return true;
  }
}

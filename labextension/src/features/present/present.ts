/**
 * Present mode: the graph for a projector. It owns `on` and applies the
 * mode to the parts it changes: the root's class (present.css), the
 * toolbar's button, the openings (small graphs start from their scopes,
 * openings.ts), and the camera (fits never below scale 1, where every text
 * is at least 16 px; a fit wider than the view shows its middle, camera.ts).
 * The type sizes are text.ts's PRESENT, which `style` hands to the layout.
 *
 *     if (presentation.set(true)) { relayout(); }
 */

import { MIN_READABLE, MIN_WHOLE, type Camera } from '../../viewport/camera';
import type { Openings } from '../../model/openings';
import { NORMAL, PRESENT, type TextStyle } from '../../paint/text';

/** The toolbar's Present button, pressed or not. */
export interface PresentButton {
  setPresent(on: boolean): void;
}

export class Presentation {
  on = false; // present mode is on

  constructor(
    private readonly root: HTMLElement,
    private readonly toolbar: PresentButton,
    private readonly openings: Openings,
    private readonly camera: Camera
  ) {}

  /** The type sizes to lay out with. */
  get style(): TextStyle {
    return this.on ? PRESENT : NORMAL;
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
    this.camera.framesCell = !on;
    return true;
  }
}

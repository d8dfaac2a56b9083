/**
 * ErrorStrip: a failed run's error, whole, in a strip between the bars and
 * the graph (never over its boxes). The failed op's box is drawn red (its
 * status "error") and its tooltip holds the same message; the strip wraps the
 * message (it is never cut) and a click on it selects the op and brings it
 * into view. Hidden when the run shown did not fail.
 */

import { html } from '../../paint/dom';
import type { RunState } from '../../protocol/run';

export class ErrorStrip {
  private readonly root: HTMLDivElement;
  private readonly text: HTMLSpanElement;
  private node = ''; // the failed op shown ('' when none)

  /** The strip goes right before `viewport`; `goTo` selects an op and brings it into view. */
  constructor(viewport: HTMLElement, goTo: (name: string) => void) {
    const root = (this.root = html('div', 'fb-error-strip', viewport.parentElement ?? viewport));
    viewport.before(root);
    root.hidden = true;
    root.title = 'Click to show the op that failed';
    html('span', 'fb-error-strip-mark', root, '\u2716');
    this.text = html('span', 'fb-error-strip-text', root);
    root.addEventListener('click', () => {
      if (this.node) {
        goTo(this.node);
      }
    });
  }

  /** Show the error of `run`, if it failed; returns whether the strip changed (the graph's room did). */
  update(run: RunState): boolean {
    const err = run.phase === 'error' ? run.error : null;
    const message = err ? err.message : '';
    if (this.root.hidden === !message && this.text.textContent === message) {
      return false;
    }
    this.node = err ? err.node : '';
    this.root.hidden = !message;
    this.text.textContent = message;
    this.root.dataset.node = this.node;
    return true;
  }
}

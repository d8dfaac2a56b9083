/**
 * StepBar: the stepper's buttons above the graph (Step, Run to selected,
 * Continue, Reset) and its message. Shown while a stepper is attached; a
 * button press goes to the host as a StepAction (the Python side steps and
 * sends the new stepper state back). It notes the op the stepper is at, so
 * the view follows it from op to op.
 */

import { html } from '../../paint/dom';
import type { StepAction, StepperState } from '../../protocol/stepper';

export class StepBar {
  private readonly root: HTMLDivElement;
  private readonly message: HTMLSpanElement;
  private readonly runTo: HTMLButtonElement;
  private current: string | null = null; // the op the stepper was last seen at

  /** `onAction` gets each button's action (the view adds the selected op to `run_to`). */
  constructor(parent: HTMLElement, onAction: (action: StepAction) => void) {
    const root = (this.root = html('div', 'fb-stepbar', parent));
    root.hidden = true;
    html('span', 'fb-stepbar-title', root, 'Stepper');
    const button = (cls: string, text: string, action: StepAction, title: string) => {
      const b = html('button', `fb-button ${cls}`, root, text);
      b.title = title;
      b.addEventListener('click', () => onAction(action));
      return b;
    };
    button('fb-step', 'Step', 'step', 'Run the next ready op');
    this.runTo = button('fb-run-to', 'Run to selected', 'run_to', 'Run until the selected op is done');
    button('fb-cont', 'Continue', 'cont', 'Run the rest of the step');
    button('fb-reset', 'Reset', 'reset', 'Start the step again');
    this.message = html('span', 'fb-stepbar-message', root);
  }

  /**
   * Show the stepper's state (hidden when no stepper is attached); returns
   * the op it has just moved to, which the view brings into sight (null:
   * the same op as before, or none).
   */
  update(st: StepperState): string | null {
    this.root.hidden = !st.active;
    this.message.textContent = st.message;
    if (!st.active) {
      this.current = null;
      return null;
    }
    if (st.current && st.current !== this.current) {
      this.current = st.current;
      return st.current;
    }
    return null;
  }

  /** Whether "Run to selected" can run: something a stepper can run to is selected. */
  set canRunTo(on: boolean) {
    this.runTo.disabled = !on;
  }
}

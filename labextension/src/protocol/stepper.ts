/**
 * The stepper state the Python side sends (the `stepper` trait, the panel's
 * `{stepper}` message), and the actions the view sends back.
 */

import { normalizeCopies, normalizePlacement, type CopySpec } from './run';

export interface StepperState {
  active: boolean;
  current: string | null;
  done: string[];
  ready: string[];
  pruned: string[];
  values: Record<string, string>;
  message: string;
  placement: Record<string, string>;
  copies: CopySpec[];
}


/** The actions the stepper toolbar sends back to Python. */
export type StepAction = 'step' | 'run_to' | 'cont' | 'reset';

export const EMPTY_STEPPER: StepperState = {
  active: false,
  current: null,
  done: [],
  ready: [],
  pruned: [],
  values: {},
  message: '',
  placement: {},
  copies: []
};

export function normalizeStepper(s: unknown): StepperState {
  const o = (s ?? {}) as Partial<StepperState>;
  return {
    active: Boolean(o.active),
    current: typeof o.current === 'string' ? o.current : null,
    done: Array.isArray(o.done) ? o.done : [],
    ready: Array.isArray(o.ready) ? o.ready : [],
    pruned: Array.isArray(o.pruned) ? o.pruned : [],
    values: o.values && typeof o.values === 'object' ? o.values : {},
    message: typeof o.message === 'string' ? o.message : '',
    placement: normalizePlacement(o.placement),
    copies: normalizeCopies(o.copies)
  };
}

/**
 * What a run and the stepper say about each op, folded onto the visible
 * boxes: status, kernel time, value preview. Sets are rebuilt once per
 * update (at most ~20 a second), then each box is one pass over its ops.
 */

import type { Leaf, Visible } from './hierarchy';
import type { RunState } from '../protocol/run';
import type { StepperState } from '../protocol/stepper';

export type Status = 'idle' | 'outside' | 'fed' | 'pending' | 'done' | 'running' | 'error';

const RANK: Record<Status, number> = {
  idle: 0,
  outside: 0,
  fed: 1,
  done: 2,
  pending: 3,
  running: 4,
  error: 5
};

export type StepMark = '' | 'done' | 'ready' | 'current';
const STEP_RANK: Record<StepMark, number> = { '': 0, done: 1, ready: 2, current: 3 };

export interface BoxState {
  status: Status;
  dim: boolean; // outside the last run's subgraph, or in it but ran 0 times
  untaken: boolean; // in the run's subgraph but never ran: a branch not taken (protocol/loops.ts)
  timeUs: number | null;
  step: StepMark;
  stale: boolean;
  errorMessage: string;
  device: string; // where its ops ran: "GPU:0", "mixed", or "" (unknown, or a CPU-only run)
}

export class Overlay {
  run: RunState;
  stepper: StepperState;
  private pruned = new Set<string>();
  private fed = new Set<string>();
  private done = new Set<string>();
  private running = new Set<string>();
  private notRun = new Set<string>(); // ops of the run that ran 0 times (an untaken branch)
  private stepDone = new Set<string>();
  private stepReady = new Set<string>();
  private stepPruned = new Set<string>();

  constructor(run: RunState, stepper: StepperState) {
    this.run = run;
    this.stepper = stepper;
    this.setRun(run);
    this.setStepper(stepper);
  }

  setRun(run: RunState): void {
    this.run = run;
    this.pruned = new Set(run.pruned);
    this.fed = new Set(run.fed);
    this.done = new Set(run.done);
    this.running = new Set(run.running);
    this.notRun = new Set(run.control_flow.not_run);
  }

  setStepper(s: StepperState): void {
    this.stepper = s;
    this.stepDone = new Set(s.done);
    this.stepReady = new Set(s.ready);
    this.stepPruned = new Set(s.pruned);
  }

  get hasRun(): boolean {
    return this.run.seq > 0;
  }

  get hasTimes(): boolean {
    for (const _ in this.run.times_us) {
      return true;
    }
    return false;
  }

  leafStatus(name: string): Status {
    const r = this.run;
    if (r.error && r.error.node === name) {
      return 'error';
    }
    if (this.running.has(name)) {
      return 'running';
    }
    if (this.notRun.has(name)) {
      return 'outside';
    }
    if (this.done.has(name)) {
      return 'done';
    }
    if (this.fed.has(name)) {
      return 'fed';
    }
    if (r.seq > 0) {
      if (this.pruned.size > 0 && !this.pruned.has(name)) {
        return 'outside';
      }
      // only a run under way has ops still to come: the ops a failed run never reached are idle again
      return r.phase === 'done' ? 'done' : r.phase === 'running' ? 'pending' : 'idle';
    }
    return 'idle';
  }

  leafStep(name: string): StepMark {
    const s = this.stepper;
    if (!s.active) {
      return '';
    }
    if (s.current === name) {
      return 'current';
    }
    if (this.stepReady.has(name)) {
      return 'ready';
    }
    if (this.stepDone.has(name)) {
      return 'done';
    }
    return '';
  }

  /** Is the op outside what is being shown as "the run" (dimmed)? */
  leafDim(name: string): boolean {
    if (this.stepper.active && this.stepPruned.size > 0) {
      return !this.stepPruned.has(name);
    }
    return this.run.seq > 0 && ((this.pruned.size > 0 && !this.pruned.has(name)) || this.notRun.has(name));
  }

  /** Op name -> the device it ran on ("GPU:0"), from the stepper's plan or the run's. */
  get placement(): Record<string, string> {
    const s = this.stepper;
    return s.active && s.pruned.length > 0 ? s.placement : this.run.placement;
  }

  /** The device op `name` ran on, "" when not known (or the run was on the CPU only). */
  device(name: string): string {
    return this.placement[name] ?? '';
  }

  value(name: string): string | null {
    return this.stepper.values[name] ?? this.run.values[name] ?? null;
  }

  time(name: string): number | null {
    const t = this.run.times_us[name];
    return typeof t === 'number' ? t : null;
  }

  box(v: Visible, leavesOf: (v: Visible) => Leaf[]): BoxState {
    const leaves = leavesOf(v);
    let status: Status = 'idle';
    let rank = -1;
    let allDim = leaves.length > 0;
    let time: number | null = null;
    let step: StepMark = '';
    let stale = false;
    let errorMessage = '';
    let anyInRun = false;
    let untaken = leaves.length > 0 && this.notRun.size > 0 && !this.stepper.active;
    const placement = this.placement;
    let device = '';
    let devices = 0;
    for (const l of leaves) {
      const n = l.key;
      const s = this.leafStatus(n);
      if (s !== 'outside') {
        anyInRun = true;
      }
      if (RANK[s] > rank) {
        rank = RANK[s];
        status = s;
      }
      if (allDim && !this.leafDim(n)) {
        allDim = false;
      }
      if (untaken && !this.notRun.has(n)) {
        untaken = false;
      }
      const t = this.run.times_us[n];
      if (typeof t === 'number') {
        time = (time ?? 0) + t;
      }
      const m = this.leafStep(n);
      if (STEP_RANK[m] > STEP_RANK[step]) {
        step = m;
      }
      if (l.node.stale) {
        stale = true;
      }
      if (s === 'error' && this.run.error) {
        errorMessage = this.run.error.message;
      }
      const d = placement[n];
      if (d !== undefined && d !== device && devices < 2) {
        devices += 1;
        device = d;
      }
    }
    if (status === 'idle' && !anyInRun && this.run.seq > 0 && leaves.length > 0) {
      status = 'outside';
    }
    if (devices > 1) {
      device = 'mixed';
    }
    return { status, dim: allDim, untaken, timeUs: time, step, stale, errorMessage, device };
  }
}

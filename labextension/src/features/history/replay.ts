/**
 * Replay: a kept run (protocol/history.ts KeptRun) animated op by op in its execution
 * order, at a pace a class can follow however fast the run was: the whole
 * replay takes about `seconds` (each step between MIN_STEP_MS and
 * MAX_STEP_MS). Each frame is a run state, as if the run were watched op by
 * op: the ops before the step are done, the step's op is running.
 */

import type { KeptRun } from '../../protocol/history';
import type { RunState } from '../../protocol/run';

const MIN_STEP_MS = 40; // long runs: at most ~25 steps a second
const MAX_STEP_MS = 600; // short runs: each op stays lit long enough to see

/** The run state shown at step `k` of replaying `run` (k = order.length: the end). */
export function replayFrame(run: KeptRun, k: number): RunState {
  const order = run.order;
  if (k >= order.length) {
    return run;
  }
  const done = order.slice(0, k);
  const times: Record<string, number> = {};
  for (const n of done) {
    const t = run.times_us[n];
    if (typeof t === 'number') {
      times[n] = t;
    }
  }
  const values: Record<string, string> = {};
  for (const n of done) {
    const v = run.values[n];
    if (v !== undefined) {
      values[n] = v;
    }
  }
  const failing = run.error !== null && run.error.node === order[k];
  return {
    ...run,
    phase: failing ? 'error' : 'running',
    done,
    running: failing ? [] : [order[k]],
    times_us: times,
    values,
    error: failing ? run.error : null
  };
}

/** Plays one replay at a time; `show` gets each frame, `ended` the end (or a stop). */
export class Replay {
  private timer = 0;
  private run: KeptRun | null = null;
  private k = 0;
  private stepMs = MAX_STEP_MS;

  constructor(
    private readonly show: (state: RunState, step: number, of: number) => void,
    private readonly ended: () => void
  ) {}

  get playing(): boolean {
    return this.run !== null;
  }

  /** The seq of the run playing (0: none). */
  get seq(): number {
    return this.run?.seq ?? 0;
  }

  /** Replay `run` in about `seconds`. */
  start(run: KeptRun, seconds = 2): void {
    this.stop(false);
    const n = Math.max(1, run.order.length);
    this.stepMs = Math.min(MAX_STEP_MS, Math.max(MIN_STEP_MS, (seconds * 1000) / n));
    this.run = run;
    this.k = 0;
    this.tick();
  }

  /** Stop playing (the last frame shown stays until the host shows something else). */
  stop(notify = true): void {
    window.clearTimeout(this.timer);
    const was = this.run !== null;
    this.run = null;
    if (was && notify) {
      this.ended();
    }
  }

  private tick(): void {
    const run = this.run;
    if (!run) {
      return;
    }
    const n = run.order.length;
    this.show(replayFrame(run, this.k), Math.min(this.k, n), n);
    if (this.k >= n || (run.error !== null && run.order[this.k] === run.error.node)) {
      this.run = null;
      this.ended();
      return;
    }
    this.k += 1;
    this.timer = window.setTimeout(() => this.tick(), this.stepMs);
  }
}

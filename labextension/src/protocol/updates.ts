/**
 * Updates: the newest state a view has shown, per kind of state. The kernel
 * numbers every state it sends (`update`), so one that arrives late is
 * dropped, never drawn over a newer one.
 *
 *     if (updates.fresh('run', state)) { draw(state); }
 *
 * Runs watched whole of the plan the last `run` state showed come as ticks
 * ({seq, total_us, base, update}): the newest such run's number and time,
 * amending the `run` state numbered `base` (dropped on any other; Tick,
 * run.ts).
 */

export type StateKind = 'graph' | 'run' | 'stepper' | 'history';

export class Updates {
  private readonly newest: Record<StateKind, number> = { graph: 0, run: 0, stepper: 0, history: 0 };

  /** Whether `state` is at least as new as the one shown (and note it as the newest). */
  fresh(key: StateKind, state: unknown): boolean {
    const n = (state as { update?: unknown } | null)?.update;
    if (typeof n !== 'number') {
      return true; // a state made in the browser or by Python directly (show_times)
    }
    if (n < this.newest[key]) {
      return false;
    }
    this.newest[key] = n;
    return true;
  }
}

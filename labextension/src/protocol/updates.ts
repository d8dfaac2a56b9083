/**
 * Updates: the newest state a view has shown, per kind of state. The kernel
 * numbers every state it sends (`update`), so one that arrives late is
 * dropped, never drawn over a newer one.
 *
 *     if (updates.fresh('run', state)) { draw(state); }
 *
 * Runs watched whole of the plan the last `run` state showed come as ticks
 * ({seq, total_us, base, update}): the newest such run's number and time,
 * amending the `run` state numbered `base` (dropped on any other).
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

/** A tick: runs watched whole since the `run` state with seq `base`, the newest's number and time. */
export interface Tick {
  seq: number;
  total_us: number;
  base: number;
}

/** `t` as a Tick, or null if it is not one. */
export function normalizeTick(t: unknown): Tick | null {
  const o = (t ?? {}) as Partial<Tick>;
  if (typeof o.seq !== 'number' || typeof o.base !== 'number') {
    return null;
  }
  return { seq: o.seq, total_us: typeof o.total_us === 'number' ? o.total_us : 0, base: o.base };
}

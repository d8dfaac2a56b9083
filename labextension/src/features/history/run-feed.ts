/**
 * RunFeed: the runs the host sends a view, and which one it shows.
 *
 * - `run` states (`setRun`): the newest run of the graph, whole;
 * - ticks (`setTick`, or a `{tick}` message): later runs of that run's plan,
 *   watched whole, amend it with their number and time (updates.ts);
 * - the run list (`setHistory`) and the kept runs the view asked for
 *   (`{history_run}` / `{replay}` messages) go to the RunHistory (history.ts).
 *
 * While the run list shows a kept run, live runs wait in `live` and are shown
 * again when it follows live runs. A state older than one shown is dropped.
 */

import { RunHistory } from './history';
import { normalizeTick, Updates } from './updates';
import { EMPTY_RUN, normalizeHistory, normalizeRun, type RunState } from './types';

export class RunFeed {
  live: RunState = EMPTY_RUN; // the newest run the host sent (drawn when following)
  private base = 0; // seq of the last whole `run` state (ticks amend it)

  constructor(
    private readonly updates: Updates,
    private readonly history: RunHistory,
    private readonly show: (run: RunState) => void
  ) {}

  /** A whole run state from the host. */
  setRun(r: unknown): void {
    if (!this.updates.fresh('run', r)) {
      return;
    }
    this.live = normalizeRun(r);
    this.base = this.live.seq;
    this.showLive();
  }

  /** A tick from the host: later runs of the plan shown, watched whole (their number and time). */
  setTick(t: unknown): void {
    const tick = normalizeTick(t);
    if (!tick || tick.base !== this.base || !this.updates.fresh('run', t)) {
      return;
    }
    this.live = { ...this.live, seq: tick.seq, total_us: tick.total_us };
    this.showLive();
  }

  /** The run list (the kernel's `history` state). */
  setHistory(h: unknown): void {
    if (this.updates.fresh('history', h)) {
      this.history.setIndex(normalizeHistory(h));
    }
  }

  /** A message from the host: a tick ({tick}), a kept run asked for ({history_run}) or one to replay ({replay}). */
  receive(msg: unknown): void {
    if (msg && typeof msg === 'object' && 'tick' in msg) {
      this.setTick((msg as { tick: unknown }).tick);
      return;
    }
    this.history.message(msg);
  }

  private showLive(): void {
    if (this.history.following) {
      this.show(this.live);
    }
  }
}

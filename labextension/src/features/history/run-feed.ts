/**
 * RunFeed: the runs the host sends a view, and which one it shows.
 *
 * - `run` states (`setRun`): the newest run of the graph, whole;
 * - ticks (`setTick`, or a `{tick}` message): later runs of that run's plan,
 *   watched whole, amend it with their number and time (protocol/run.ts);
 * - the run list (`setHistory`) and the kept runs the view asked for
 *   (`{history_run}` / `{replay}` messages) go to the RunHistory (history.ts).
 *
 * While the run list shows a kept run, live runs wait in `live` and are shown
 * again when it follows live runs. A state older than one shown is dropped
 * (`updates`, updates.ts).
 */

import { RunHistory } from './history';
import { normalizeHistory } from '../../protocol/history';
import { EMPTY_RUN, normalizeRun, normalizeTick, type RunState } from '../../protocol/run';
import type { Updates } from '../../protocol/updates';

/** What the feed asks of the view. */
export interface FeedHost {
  /** Ask the kernel for kept run `seq` (the run list needs it). */
  request(seq: number): void;
  /** Draw `run`. */
  show(run: RunState): void;
}

export class RunFeed {
  live: RunState = EMPTY_RUN; // the newest run the host sent (drawn when following)
  private base = 0; // seq of the last whole `run` state (ticks amend it)

  readonly history: RunHistory; // the run list's bar

  /** The run list's bar goes under `parent`. */
  constructor(
    parent: HTMLElement,
    private readonly updates: Updates,
    private readonly host: FeedHost
  ) {
    this.history = new RunHistory(parent, {
      request: seq => host.request(seq),
      show: run => host.show(run ?? this.live)
    });
  }

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

  dispose(): void {
    this.history.dispose();
  }

  private showLive(): void {
    this.history.setLive(this.live.seq);
    if (this.history.following) {
      this.host.show(this.live);
    }
  }
}

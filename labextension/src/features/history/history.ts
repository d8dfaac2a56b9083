/**
 * The run list: pick any kept run of the graph, replay it, compare it with
 * another. Python side: flowbook/notebook/history.py.
 *
 * State it owns:
 * - `rows`: the run list the kernel sent (`history` state), newest last
 * - `cache`: kept runs fetched so far, by seq (a kept run never changes)
 * - `picked`: the seq shown, 0 while following live runs
 * - `live`: the seq of the newest run the host sent (run-feed.ts): the number
 *   the summary shows too, so both name a run the same (the run list's index
 *   comes at most twice a second and may trail it)
 * - `against`: the seq compared with (0: none); `changed`: the ops whose
 *   value or kernel time differ between the run shown and that one
 * - `replay` (replay.ts): the animation playing, if any
 *
 * A kept run the view does not have yet is asked for through the host
 * (`request`); `receive` gets it. The bar is a row of its own under the
 * toolbar: "Runs [live ▾] live: run 7 · 5 kept · Replay · compare [none ▾]".
 */

import { html } from '../../paint/dom';
import { formatTime } from '../../paint/text';
import { Replay } from './replay';
import { normalizeKeptRun, type HistoryRow, type HistoryState, type KeptRun } from '../../protocol/history';
import type { RunState } from '../../protocol/run';

/** What the run list asks of the view. */
export interface HistoryHost {
  /** Ask the kernel for kept run `seq` (it comes back through `receive`). */
  request(seq: number): void;
  /** Draw `run` instead of what is shown; null: the live run again. */
  show(run: RunState | null): void;
}

const TIME_RATIO = 1.5; // kernel times this far apart count as changed
const TIME_FLOOR_US = 2; // ...when they also differ by this much

export class RunHistory {
  readonly root: HTMLDivElement;
  private rows: HistoryRow[] = [];
  private readonly cache = new Map<number, KeptRun>();
  private picked = 0;
  private live = 0;
  private against = 0;
  private changed = new Set<string>();
  private wantReplay: { seq: number; seconds: number } | null = null;
  private readonly replay: Replay;
  private readonly select: HTMLSelectElement;
  private readonly position: HTMLSpanElement;
  private readonly replayButton: HTMLButtonElement;
  private readonly compare: HTMLSelectElement;
  private readonly note: HTMLSpanElement;

  constructor(
    parent: HTMLElement,
    private readonly host: HistoryHost
  ) {
    const root = (this.root = html('div', 'fb-history', parent));
    root.hidden = true;
    root.dataset.flowbookReplay = '';
    html('span', 'fb-history-title', root, 'Runs');
    this.select = html('select', 'fb-history-select', root);
    this.select.title = 'Show an earlier run of this graph, or follow new runs (live)';
    html('option', '', this.select, 'live (follow new runs)').value = '0';
    this.select.addEventListener('change', () => this.pick(Number(this.select.value)));
    this.position = html('span', 'fb-history-position', root);
    this.replayButton = html('button', 'fb-button fb-history-replay', root, '\u25B6 Replay');
    this.replayButton.title = 'Play the run shown op by op, in the order its ops ran';
    this.replayButton.addEventListener('click', () => this.toggleReplay());
    html('span', 'fb-history-title fb-history-compare-title', root, 'compare');
    this.compare = html('select', 'fb-history-compare', root);
    this.compare.title = 'Highlight the ops whose value or time differs in another run';
    html('option', '', this.compare, 'none').value = '0';
    this.compare.addEventListener('change', () => this.setAgainst(Number(this.compare.value)));
    this.note = html('span', 'fb-history-note', root);
    this.replay = new Replay(
      (state, step, of) => {
        root.dataset.flowbookReplay = 'playing';
        root.dataset.flowbookReplayStep = String(step);
        this.note.textContent = `replaying run ${state.seq}: op ${step} of ${of}`;
        this.host.show(state);
      },
      () => this.replayEnded()
    );
  }

  /** Whether the view shows new runs as they come (nothing picked, nothing playing). */
  get following(): boolean {
    return this.picked === 0 && !this.replay.playing;
  }

  /** The ops to highlight as changed (see `against`). */
  get changedOps(): ReadonlySet<string> {
    return this.changed;
  }

  /** The run list from the kernel. */
  setIndex(h: HistoryState): void {
    this.rows = h.runs;
    const kept = new Set(h.runs.map(r => r.seq));
    for (const seq of [...this.cache.keys()]) {
      if (!kept.has(seq)) {
        this.cache.delete(seq);
      }
    }
    this.root.hidden = h.runs.length === 0;
    this.fillSelects();
  }

  /** The seq of the newest run the host sent (the number the summary shows). */
  setLive(seq: number): void {
    if (seq !== this.live) {
      this.live = seq;
      this.updatePosition();
    }
  }

  /** A kept run the view asked for (null fields: it is no longer kept). */
  receive(seq: number, run: KeptRun | null): void {
    if (!run) {
      if (this.picked === seq) {
        this.note.textContent = `run ${seq} is no longer kept`;
      }
      return;
    }
    this.cache.set(run.seq, run);
    const want = this.wantReplay;
    if (want && want.seq === run.seq) {
      this.wantReplay = null;
      this.play(run, want.seconds);
      return;
    }
    if (this.picked === run.seq && !this.replay.playing) {
      this.showPicked();
    } else if (this.against === run.seq) {
      this.updateChanged();
      this.showPicked();
    }
  }

  /**
   * A message from the host: a kept run asked for ({history_run}), one to replay
   * ({replay}), or a line to show ({message}: a stepper action or request refused).
   */
  message(msg: unknown): void {
    const m = (msg ?? {}) as {
      history_run?: { seq?: unknown };
      replay?: unknown;
      seconds?: unknown;
      message?: unknown;
    };
    if (typeof m.message === 'string') {
      this.note.textContent = m.message.slice(0, 300);
    }
    if (m.history_run) {
      const seq = m.history_run.seq;
      this.receive(typeof seq === 'number' ? seq : 0, normalizeKeptRun(m.history_run));
    }
    const run = m.replay ? normalizeKeptRun(m.replay) : null;
    if (run) {
      this.play(run, typeof m.seconds === 'number' ? m.seconds : 2);
    }
  }

  /** Replay a run the kernel sent (`widget.replay(run)`). */
  play(run: KeptRun, seconds = 2): void {
    this.cache.set(run.seq, run);
    this.picked = run.seq;
    this.select.value = String(run.seq);
    this.updatePosition();
    this.updateChanged();
    this.replayButton.textContent = '\u25A0 Stop';
    this.replay.start(run, seconds);
  }

  /** Show kept run `seq` (0: follow live runs again). */
  pick(seq: number): void {
    this.replay.stop(false);
    this.replayButton.textContent = '\u25B6 Replay';
    this.root.dataset.flowbookReplay = '';
    this.picked = this.rows.some(r => r.seq === seq) ? seq : 0;
    this.select.value = String(this.picked);
    this.note.textContent = '';
    this.updatePosition();
    this.updateChanged();
    if (this.picked === 0) {
      this.host.show(null);
      return;
    }
    if (!this.cache.has(seq)) {
      this.note.textContent = 'loading\u2026';
      this.host.request(seq);
      return;
    }
    this.showPicked();
  }

  /** Mark the drawn boxes of the changed ops under `root` (`keyOf`: the key of the box showing an op). */
  paint(root: HTMLElement, keyOf: (op: string) => string | undefined): void {
    markChanged(root, this.changed, keyOf);
  }

  dispose(): void {
    this.replay.stop(false);
  }

  // ---------------------------------------------------------------- inside
  /** The seq the bar works on: the picked run, else the newest. */
  private get current(): number {
    const newest = this.rows.length > 0 ? this.rows[this.rows.length - 1].seq : 0;
    return this.picked || Math.max(this.live, newest);
  }

  private showPicked(): void {
    const run = this.cache.get(this.picked);
    if (!run) {
      return;
    }
    const notes: string[] = [];
    if (run.times_seq && run.times_seq !== run.seq) {
      notes.push(`times of run ${run.times_seq}`);
    }
    if (run.values_seq && run.values_seq !== run.seq) {
      notes.push(`values of run ${run.values_seq}`);
    }
    if (this.against) {
      const n = this.changed.size;
      notes.push(`${n} op${n === 1 ? '' : 's'} changed vs run ${this.against}`);
    }
    this.note.textContent = notes.join(' \u00B7 ');
    this.host.show(run);
  }

  private toggleReplay(): void {
    if (this.replay.playing) {
      this.replay.stop();
      return;
    }
    const seq = this.current;
    if (!seq) {
      return;
    }
    const run = this.cache.get(seq);
    if (run) {
      this.play(run);
    } else {
      this.wantReplay = { seq, seconds: 2 };
      this.host.request(seq);
    }
  }

  private replayEnded(): void {
    this.replayButton.textContent = '\u25B6 Replay';
    this.root.dataset.flowbookReplay = 'done';
    this.showPicked();
  }

  private setAgainst(seq: number): void {
    this.against = seq;
    if (seq && !this.cache.has(seq)) {
      this.host.request(seq);
    }
    const shown = this.current;
    if (shown && !this.cache.has(shown)) {
      this.host.request(shown);
    }
    this.updateChanged();
    if (this.picked) {
      this.showPicked();
    } else {
      this.host.show(null);
    }
  }

  private updateChanged(): void {
    const a = this.cache.get(this.current);
    const b = this.cache.get(this.against);
    this.changed = a && b && a.seq !== b.seq ? changedOps(a, b) : new Set();
    this.root.dataset.flowbookChanged = String(this.changed.size);
  }

  private fillSelects(): void {
    if (this.picked && !this.rows.some(r => r.seq === this.picked)) {
      this.picked = 0; // it fell out of the history
      this.host.show(null);
    }
    if (this.against && !this.rows.some(r => r.seq === this.against)) {
      this.against = 0;
      this.updateChanged();
    }
    syncOptions(this.select, this.rows, this.picked);
    syncOptions(this.compare, this.rows, this.against);
    this.updatePosition();
  }

  private updatePosition(): void {
    const n = this.rows.length;
    const seq = this.current;
    const kept = `${n} run${n === 1 ? '' : 's'} kept`;
    this.position.textContent = n === 0 ? '' : `${this.picked ? 'run' : 'live: run'} ${seq} \u00B7 ${kept}`;
    this.position.title = n === 0 ? '' : `Runs are numbered from 1 in this graph; the last ${kept}`;
    this.root.dataset.flowbookSeq = String(seq);
    this.root.dataset.flowbookRuns = String(n);
    this.root.dataset.flowbookPicked = String(this.picked);
  }
}

/**
 * Make `sel`'s options (after the first, "live" or "none") one per row, in order, touching
 * only what changed: the list is updated with every run, and rebuilding it would close an
 * open drop-down and lose its scroll position.
 */
function syncOptions(sel: HTMLSelectElement, rows: HistoryRow[], value: number): void {
  const kept = new Set(rows.map(r => String(r.seq)));
  for (const o of [...sel.options].slice(1)) {
    if (!kept.has(o.value)) {
      o.remove();
    }
  }
  let k = 1; // the option that should show rows[i]
  for (const r of rows) {
    const v = String(r.seq);
    const at = sel.options[k];
    if (!at || at.value !== v) {
      const opt = document.createElement('option');
      opt.value = v;
      opt.textContent = rowLabel(r);
      sel.insertBefore(opt, at ?? null);
    }
    k += 1;
  }
  while (sel.options.length > rows.length + 1) {
    sel.options[sel.options.length - 1].remove(); // left over from rows out of order
  }
  sel.value = String(kept.has(String(value)) ? value : 0);
}

/** "run 7 · loss · 1.20 ms". */
function rowLabel(r: HistoryRow): string {
  const what = r.fetches.length > 0 ? r.fetches.join(', ') : `${r.ops} ops`;
  const status = r.phase === 'error' ? 'error' : formatTime(r.total_us);
  return `run ${r.seq} \u00B7 ${what} \u00B7 ${status}`;
}

/** Ops of both runs whose value preview differs or whose kernel time moved a lot. */
export function changedOps(a: KeptRun, b: KeptRun): Set<string> {
  const out = new Set<string>();
  const inB = new Set(b.pruned);
  for (const n of a.pruned) {
    if (!inB.has(n)) {
      continue;
    }
    const va = a.values[n];
    const vb = b.values[n];
    if (va !== undefined && vb !== undefined && va !== vb) {
      out.add(n);
      continue;
    }
    const ta = a.times_us[n];
    const tb = b.times_us[n];
    if (typeof ta === 'number' && typeof tb === 'number') {
      const hi = Math.max(ta, tb);
      const lo = Math.max(Math.min(ta, tb), 1e-3);
      if (hi / lo >= TIME_RATIO && hi - lo >= TIME_FLOOR_US) {
        out.add(n);
      }
    }
  }
  return out;
}

/** Mark the drawn boxes of the changed ops (`keyOf`: the key of the box showing an op). */
export function markChanged(root: HTMLElement, ops: ReadonlySet<string>, keyOf: (op: string) => string | undefined): void {
  for (const el of root.querySelectorAll('.fb-node.fb-changed')) {
    el.classList.remove('fb-changed');
  }
  for (const op of ops) {
    const key = keyOf(op);
    if (key !== undefined) {
      root.querySelector(`.fb-node[data-name="${CSS.escape(key)}"]`)?.classList.add('fb-changed');
    }
  }
}

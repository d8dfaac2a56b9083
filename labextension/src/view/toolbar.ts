/**
 * Toolbar: the row above the graph: the search box (search.ts), "Fit",
 * "Collapse all", "Present" (a toggle: big type for a projector), and a
 * summary of the graph and the run shown.
 */

import { copiesPhrase } from '../features/tasks/tasks';
import { html } from '../paint/dom';
import { formatTime } from '../paint/text';
import { Search, type SearchHost } from '../features/search/search';
import type { RunState } from '../protocol/run';

/** What the toolbar's buttons ask of the view, besides what search asks. */
export interface ToolbarHost extends SearchHost {
  /** Fit the whole graph in view. */
  fit(): void;
  /** Collapse every name scope. */
  collapseAll(): void;
  /** Turn present mode on or off. */
  togglePresent(): void;
}

export class Toolbar {
  readonly search: Search;
  private readonly summary: HTMLSpanElement;
  private readonly present: HTMLButtonElement;

  constructor(parent: HTMLElement, host: ToolbarHost) {
    const bar = html('div', 'fb-toolbar', parent);
    this.search = new Search(bar, host);
    const fit = html('button', 'fb-button fb-fit', bar, 'Fit');
    fit.title = 'Fit the whole graph in view';
    fit.addEventListener('click', () => host.fit());
    const collapse = html('button', 'fb-button fb-collapse-all', bar, 'Collapse all');
    collapse.title = 'Collapse every name scope';
    collapse.addEventListener('click', () => host.collapseAll());
    const present = (this.present = html('button', 'fb-button fb-present-toggle', bar, 'Present'));
    present.title = 'Present mode: big labels for a projector, scopes collapsed';
    present.setAttribute('aria-pressed', 'false');
    present.addEventListener('click', () => host.togglePresent());
    this.summary = html('span', 'fb-summary', bar);
  }

  /** Show whether present mode is on. */
  setPresent(on: boolean): void {
    this.present.setAttribute('aria-pressed', String(on));
    this.present.classList.toggle('fb-on', on);
  }

  /** "12 ops · run 3: done in 1.2 ms · 2 copies between devices". */
  setSummary(opCount: number, r: RunState): void {
    const n = opCount;
    let s = `${n} op${n === 1 ? '' : 's'}`;
    if (r.seq > 0) {
      s += ` \u00B7 run ${r.seq}: ${r.phase}`;
      if (r.phase === 'running') {
        s += ` (${r.done.length}/${r.pruned.length || '?'})`;
      } else if (r.total_us > 0) {
        s += ` in ${formatTime(r.total_us)}`;
      }
      if (r.copies.length > 0) {
        s += ` \u00B7 ${copiesPhrase(r.copies)}`; // copies, or Send/Recv pairs (tasks.ts)
      }
    }
    this.summary.textContent = s;
    this.summary.dataset.phase = r.phase;
  }

  dispose(): void {
    this.search.dispose();
  }
}

/**
 * Toolbar: the row above the graph: the search box (search.ts), "Fit",
 * "Collapse all", "Present" (a toggle: big type for a projector), and a
 * summary of the graph and the run shown (shortened with an ellipsis when
 * narrow; the whole of it in its tooltip).
 *
 * It takes at most MAX_ROWS rows: on a narrow view the buttons that do not
 * fit go, in OVERFLOW order, into the menu of a "⋯" button at its end
 * (`reflow`, whenever its width changes or a button comes or goes: the
 * rewrites' toggle joins it with `addItem`).
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

const MAX_ROWS = 2;

export class Toolbar {
  readonly search: Search;
  private readonly bar: HTMLDivElement;
  private readonly summary: HTMLSpanElement;
  private readonly present: HTMLButtonElement;
  private readonly more: HTMLButtonElement; // "⋯": opens the menu of what did not fit
  private readonly menu: HTMLDivElement;
  private readonly overflow: HTMLElement[] = []; // what may go into the menu, first to go first
  private readonly places = new Map<HTMLElement, Node | null>(); // where each of them sits in the bar
  private readonly resizeObserver: ResizeObserver | null;
  private reflowFrame = 0;
  private width = -1; // the bar's width at the last reflow

  constructor(parent: HTMLElement, host: ToolbarHost) {
    const bar = (this.bar = html('div', 'fb-toolbar', parent));
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
    this.more = html('button', 'fb-button fb-more', bar, '\u22EF');
    this.more.title = 'More';
    this.more.setAttribute('aria-haspopup', 'true');
    this.more.setAttribute('aria-expanded', 'false');
    this.more.hidden = true;
    this.menu = html('div', 'fb-more-menu', bar);
    this.menu.hidden = true;
    this.more.addEventListener('click', ev => {
      ev.stopPropagation();
      this.openMenu(this.menu.hidden);
    });
    this.menu.addEventListener('click', ev => {
      if ((ev.target as Element).closest('button')) {
        this.openMenu(false);
      }
    });
    document.addEventListener('pointerdown', this.onOutside, true);
    for (const el of [fit, present, collapse]) {
      this.addItem(el);
    }
    this.resizeObserver =
      typeof ResizeObserver === 'undefined'
        ? null
        : new ResizeObserver(() => {
            if (this.bar.clientWidth !== this.width) {
              this.requestReflow();
            }
          });
    this.resizeObserver?.observe(bar);
  }

  /** Let `el`, a part of the bar, go into the "⋯" menu when the bar is too narrow (before those added earlier). */
  addItem(el: HTMLElement): void {
    this.overflow.unshift(el);
    this.bar.append(this.more, this.menu); // "⋯" stays last
    this.places.set(el, el.nextSibling);
    this.requestReflow();
  }

  /** Put the buttons back in the bar, then move into the menu, in turn, those that make it over MAX_ROWS rows. */
  reflow(): void {
    this.openMenu(false);
    for (const el of [...this.overflow].reverse()) {
      if (el.parentElement === this.menu) {
        const place = this.places.get(el);
        this.bar.insertBefore(el, place && place.parentNode === this.bar ? place : this.summary);
      }
    }
    this.more.hidden = true;
    if (this.bar.clientWidth === 0 || this.rows() <= MAX_ROWS) {
      return;
    }
    this.more.hidden = false;
    for (const el of this.overflow) {
      if (this.rows() <= MAX_ROWS) {
        break;
      }
      this.menu.appendChild(el);
    }
  }

  /** Reflow soon (once a frame at most). */
  requestReflow(): void {
    if (this.reflowFrame) {
      return;
    }
    this.reflowFrame = requestAnimationFrame(() => {
      this.reflowFrame = 0;
      this.width = this.bar.clientWidth;
      this.reflow();
    });
  }

  /** How many rows the bar's parts take now. */
  private rows(): number {
    const parts = [...this.bar.children]
      .filter(c => c !== this.menu && (c as HTMLElement).offsetParent !== null)
      .map(c => c.getBoundingClientRect())
      .filter(r => r.height > 0)
      .sort((a, b) => a.top - b.top);
    let rows = 0;
    let bottom = -Infinity;
    for (const r of parts) {
      if (r.top >= bottom - 2) {
        rows++;
        bottom = r.bottom;
      } else {
        bottom = Math.max(bottom, r.bottom);
      }
    }
    return rows;
  }

  private openMenu(open: boolean): void {
    this.menu.hidden = !open;
    this.more.setAttribute('aria-expanded', String(open));
  }

  private readonly onOutside = (ev: Event): void => {
    if (!this.menu.hidden && !this.bar.contains(ev.target as Node)) {
      this.openMenu(false);
    }
  };

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
        s += ` (${progress(r)})`;
      } else if (r.total_us > 0) {
        s += ` in ${formatTime(r.total_us)}`;
      }
      if (r.copies.length > 0) {
        s += ` \u00B7 ${copiesPhrase(r.copies)}`; // copies, or Send/Recv pairs (tasks.ts)
      }
    }
    this.summary.textContent = s;
    this.summary.title = s;
    this.summary.dataset.phase = r.phase;
    this.summary.dataset.seq = String(r.seq);
  }

  dispose(): void {
    cancelAnimationFrame(this.reflowFrame);
    this.resizeObserver?.disconnect();
    document.removeEventListener('pointerdown', this.onOutside, true);
    this.search.dispose();
  }
}

/** "12/29" ops run of the plan's; in a loop, where an op runs once per iteration, "45 op runs". */
function progress(r: RunState): string {
  const ran = new Set(r.done).size;
  const of = r.pruned.length;
  if (r.done.length > ran || (of > 0 && ran > of)) {
    return `${r.done.length} op runs`;
  }
  return `${ran}/${of || '?'}`;
}

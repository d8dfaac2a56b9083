/**
 * Search: find ops (and copy nodes) by name from the toolbar's search box.
 *
 * State it owns: `matches` (the names found, in the graph's order),
 * `index` (the one shown, -1 before the first) and the query they answer.
 * Typing searches after a short pause; Enter searches, or steps to the
 * next match (Shift+Enter: the previous); Escape clears. The scopes hiding
 * the first MAX_REVEAL matches are opened, the current match is centred,
 * and the view marks every match it has drawn (`current` / `isMatch`).
 */

import { html } from '../../paint/dom';

const MAX_REVEAL = 20; // search opens the scopes of at most this many matches
const TYPING_PAUSE_MS = 150;

/** What search asks of the view. */
export interface SearchHost {
  /** Every name search may find: the ops, then the copy nodes. */
  names(): Iterable<string>;
  /** Open what hides `name`; true if the layout must change. */
  reveal(name: string): boolean;
  /** Lay out again, then center `name`. */
  relayoutTo(name: string | null): void;
  /** Center `name` in the current layout. */
  centerOn(name: string): void;
  /** Redraw the match marks (the matches changed). */
  markMatches(): void;
}

export class Search {
  matches: string[] = []; // the names found
  index = -1; // which match is shown; -1: none yet
  private readonly input: HTMLInputElement;
  private readonly count: HTMLSpanElement;
  private query = ''; // what `matches` answers, as typed
  private timer = 0;

  constructor(
    bar: HTMLElement,
    private readonly host: SearchHost
  ) {
    const input = (this.input = html('input', 'fb-search', bar));
    input.type = 'search';
    input.placeholder = 'Search ops\u2026';
    input.setAttribute('aria-label', 'Search ops by name');
    this.count = html('span', 'fb-search-count', bar);
    input.addEventListener('input', () => {
      window.clearTimeout(this.timer);
      this.timer = window.setTimeout(() => this.run(), TYPING_PAUSE_MS);
    });
    input.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        window.clearTimeout(this.timer);
        if (this.index < 0 || input.value !== this.query) {
          this.run();
        } else {
          this.step(ev.shiftKey ? -1 : 1);
        }
      } else if (ev.key === 'Escape') {
        input.value = '';
        this.run();
      }
    });
  }

  /** The search box (keys typed there are the search's own). */
  get element(): HTMLInputElement {
    return this.input;
  }

  /** The match shown, if any. */
  get current(): string | null {
    return this.index >= 0 ? this.matches[this.index] : null;
  }

  dispose(): void {
    window.clearTimeout(this.timer);
  }

  /** Search for what the box holds: reveal the first matches, show the first. */
  run(): void {
    const q = this.input.value.trim().toLowerCase();
    this.query = this.input.value;
    this.matches = [];
    this.index = -1;
    if (q) {
      for (const name of this.host.names()) {
        if (name.toLowerCase().includes(q)) {
          this.matches.push(name);
        }
      }
    }
    let changed = false;
    for (const m of this.matches.slice(0, MAX_REVEAL)) {
      changed = this.host.reveal(m) || changed;
    }
    this.count.textContent = q ? `${this.matches.length ? 1 : 0}/${this.matches.length}` : '';
    const first = this.matches.length > 0 ? this.matches[0] : null;
    this.index = first === null ? -1 : 0;
    if (changed) {
      this.host.relayoutTo(first);
    } else {
      this.host.markMatches();
      if (first !== null) {
        this.host.centerOn(first);
      }
    }
  }

  /** Show the next match (`step` 1) or the previous one (-1), opening what hides it. */
  private step(step: number): void {
    if (this.matches.length === 0) {
      return;
    }
    this.index = (this.index + step + this.matches.length) % this.matches.length;
    const m = this.matches[this.index];
    this.count.textContent = `${this.index + 1}/${this.matches.length}`;
    if (this.host.reveal(m)) {
      this.host.relayoutTo(m);
    } else {
      this.host.markMatches();
      this.host.centerOn(m);
    }
  }
}

/**
 * Loops and branches as drawn: which name scopes are while-loop frames and
 * conds, and what the run shown did in them (protocol/loops.ts; the
 * hierarchy marks the frames' groups, hierarchy.ts).
 *
 * A loop's scope is drawn as a frame: its box and its open cluster say
 * "while loop" and carry a counter, "iteration 412" while a run is in it
 * (the kernel sends the count at its usual push rate), "ran 1,000
 * iterations" after. A cond's scope says "cond" and, after a run, which
 * branch it took; the ops of the branch not taken ran 0 times, and the
 * overlay dims them (overlay.ts).
 *
 * The counter is text in a slot the box or cluster drew for it (draw.ts);
 * `paintFrames` only sets that text on each update, never a layout.
 */

import type { Group, Hierarchy } from '../../model/hierarchy';
import type { RunState } from '../../protocol/run';

/** "1,000". */
function count(n: number): string {
  return n.toLocaleString('en-US');
}

const TAKEN: Record<string, string> = {
  true: 'took the true branch',
  false: 'took the false branch',
  both: 'took both branches',
  none: 'did not run'
};

/** A frame group's counter for the run shown ('' for none) and whether it is moving. */
export function frameText(g: Group, run: RunState): { text: string; live: boolean } {
  const cf = run.control_flow;
  if (g.frame === 'while' && g.loop) {
    const at = cf.at[g.loop];
    if (run.phase === 'running') {
      return at === undefined ? { text: '', live: false } : { text: `iteration ${count(at)}`, live: true };
    }
    const n = cf.iterations[g.loop];
    if (n === undefined) {
      return { text: '', live: false };
    }
    const entered = cf.entries[g.loop] ?? 1;
    const times = entered > 1 ? `, entered ${count(entered)} times` : '';
    return { text: `ran ${count(n)} iteration${n === 1 ? '' : 's'}${times}`, live: false };
  }
  if (g.frame === 'cond' && run.phase !== 'running') {
    const t = cf.taken[g.key];
    return { text: t === undefined ? '' : (TAKEN[t] ?? ''), live: false };
  }
  return { text: '', live: false };
}

/** Set the counter of every frame drawn under `scene` (boxes and open clusters) for `run`. */
export function paintFrames(scene: Element, h: Hierarchy, run: RunState): void {
  for (const el of scene.querySelectorAll('.fb-frame-count')) {
    const g = h.groups.get(el.getAttribute('data-name') ?? '');
    const { text, live } = g ? frameText(g, run) : { text: '', live: false };
    if (el.textContent !== text) {
      el.textContent = text;
    }
    el.classList.toggle('fb-live', live);
  }
}

/** The widest counter a frame makes room for (a box's width, a cluster's title band). */
export function counterRoom(g: Group): string {
  if (g.frame === 'cond') {
    return TAKEN.false;
  }
  return g.nested ? 'ran 10,000 iterations, entered 100 times' : 'ran 100,000 iterations';
}

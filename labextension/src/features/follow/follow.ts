/**
 * Following a cell: the side panel is told which cell the notebook runs
 * (panel/opener.ts), and once the kernel sends the graph that cell made, the
 * view centres the cell's ops (focus.ts). The ops are compared by name, so
 * a graph update that does not change them (a run, another view's refresh)
 * does not move the view again.
 *
 * State: `cell`, the model id of the cell followed ('' for none); `ops`,
 * the names last centred, so each set of ops is centred once.
 */

import type { Hierarchy } from '../../model/hierarchy';

const REVEAL_AT_MOST = 8; // a cell that makes at most this many ops has them revealed (scopes opened)

/** The ops to centre, and those of them to reveal first (none when there are many). */
export interface NewOps {
  names: string[];
  reveal: string[];
}

export class CellFollower {
  private cell = ''; // model id of the cell followed
  private ops = ''; // the names last centred, one a line

  /** Follow the cell with model id `cellId` (its ops are centred when they arrive). */
  follow(cellId: string): void {
    this.cell = cellId;
    this.ops = '';
  }

  /**
   * The ops of `h` the followed cell made, if they changed since the last
   * call; null when there is nothing new to show. Many ops are shown by
   * their scopes; a few are revealed.
   *
   *     follower.follow('c1'); follower.newOps(h)  // {names: ['W', 'b', 'MatMul'], reveal: [...]}
   */
  newOps(h: Hierarchy): NewOps | null {
    if (!this.cell) {
      return null;
    }
    const names: string[] = [];
    for (const leaf of h.leaves.values()) {
      if (leaf.node.cell === this.cell) {
        names.push(leaf.key);
      }
    }
    const ops = names.join('\n');
    if (names.length === 0 || ops === this.ops) {
      return null;
    }
    this.ops = ops;
    return { names, reveal: names.length <= REVEAL_AT_MOST ? names : [] };
  }
}

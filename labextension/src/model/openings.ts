/**
 * Openings: what is open, by group key: the scopes expanded or collapsed,
 * and how many children each group shows before its "more" box (pages of
 * PAGE). Op and scope names are stable across cell re-runs, so what the
 * user opened survives graph updates; the hierarchy read is the graph's
 * latest.
 *
 * A group the user has not opened or closed is open when the graph is
 * small (unless `compact`: present mode starts from the scopes' structure),
 * or when it is one of the single scopes wrapping the whole graph; a while
 * loop's frame (features/loops/) starts closed, save as such a wrapping scope.
 *
 * The scopes opened to show the few ops of the cell followed (follow.ts)
 * are not the user's choice: they stay open only until another cell is
 * followed, so what a view shows after Run All depends on the last cell
 * only, never on how the kernel's updates happened to be batched.
 */

import { PAGE, Hierarchy, type Expansion, type Group, type Leaf, type Visible } from './hierarchy';

export const SMALL_GRAPH = 60; // graphs with at most this many ops start fully expanded

export class Openings implements Expansion {
  private h = new Hierarchy([]);
  private readonly expanded = new Map<string, boolean>(); // the user's choice
  private readonly limits = new Map<string, number>();
  private autoOpen = new Set<string>();
  private followed = new Set<string>(); // opened for the cell followed: not the user's choice
  compact = false; // small graphs start collapsed too (present mode)

  /** Follow a new hierarchy (the graph changed). */
  setHierarchy(h: Hierarchy): void {
    this.h = h;
    this.autoOpen = new Set();
    let top = h.root;
    while (top.children.length === 1 && top.children[0].type === 'group') {
      top = top.children[0];
      this.autoOpen.add(top.key);
    }
  }

  isExpanded(g: Group): boolean {
    const user = this.expanded.get(g.key);
    if (user !== undefined) {
      return user;
    }
    if (this.followed.has(g.key)) {
      return true;
    }
    if (g.frame === 'while' && !this.autoOpen.has(g.key)) {
      return false; // a loop's frame starts collapsed: its counter on one box
    }
    return (!this.compact && this.h.root.opCount <= SMALL_GRAPH) || this.autoOpen.has(g.key);
  }

  limit(g: Group): number {
    return this.limits.get(g.key) ?? PAGE;
  }

  /** Expand (`open`) or collapse the group with key `key`. */
  set(key: string, open: boolean): void {
    this.expanded.set(key, open);
  }

  /** Show the next page of `g`'s children. */
  more(g: Group): void {
    this.limits.set(g.key, this.limit(g) + PAGE);
  }

  collapseAll(): void {
    for (const key of this.h.groups.keys()) {
      this.expanded.set(key, false);
    }
  }

  /**
   * Open the groups hiding `leaves` (the ops of the cell followed) until
   * another cell is followed; those opened for the cell before close again.
   */
  revealFollowed(leaves: Leaf[]): void {
    this.followed = new Set();
    for (const leaf of leaves) {
      for (const g of this.h.ancestors(leaf)) {
        if (!this.isExpanded(g)) {
          this.followed.add(g.key);
        }
      }
    }
  }

  /** Open every group hiding `leaf` (and page it into view); true if anything changed. */
  reveal(leaf: Leaf): boolean {
    let changed = false;
    for (const g of this.h.ancestors(leaf)) {
      if (!this.isExpanded(g)) {
        this.expanded.set(g.key, true);
        changed = true;
      }
    }
    for (let x: Leaf | Group = leaf; x.parent; x = x.parent) {
      const lim = this.limit(x.parent);
      if (x.index >= lim) {
        this.limits.set(x.parent.key, Math.ceil((x.index + 1) / PAGE) * PAGE);
        changed = true;
      }
    }
    return changed;
  }

  /** The ops a box stands for (a "more" box: its group's children past the limit). */
  readonly leavesOf = (v: Visible): Leaf[] => {
    if (v.type === 'leaf') {
      return v.members ?? [v];
    }
    if (v.type === 'group') {
      return v.leaves;
    }
    const out: Leaf[] = [];
    const lim = this.limit(v.parent);
    v.parent.children.forEach((c, i) => {
      if (i >= lim) {
        if (c.type === 'leaf') {
          out.push(c);
        } else {
          out.push(...c.leaves);
        }
      }
    });
    return out;
  };
}

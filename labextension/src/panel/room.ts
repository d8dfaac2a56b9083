/**
 * Room for the side panel beside the notebook, for a projector's narrow
 * window: when the panel is shown (and when the window is resized while it
 * is), it takes at least MIN_SHARE and at most MAX_SHARE of the window's
 * width, and leaves the notebook at least MIN_NOTEBOOK_PX; on a window at
 * most NARROW_PX wide the left side bar (the file browser) collapses first.
 *
 * JupyterLab's shell holds the left area, the notebooks' dock panel and the
 * right area in one horizontal SplitPanel (`jp-main-split-panel`); the
 * panel's ancestors lead to it, and its relative sizes are set in pixels.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { Widget } from '@lumino/widgets';

export const NARROW_PX = 1280; // a window this wide or less is a projector's
export const MAX_SHARE = 0.4; // of the window's width, for the panel
export const MIN_SHARE = 0.35; // a narrower panel widens to this (room permitting): a graph needs room
export const MIN_NOTEBOOK_PX = 500; // the notebook column keeps this much
const MIN_PANEL_PX = 240; // the panel never gets narrower than this for the notebook's sake
const LEFT_HINT_PX = 250; // the left area's width when it opens again, if it was never measured

interface Split extends Widget {
  readonly widgets: readonly Widget[];
  setRelativeSizes(sizes: number[], update?: boolean): void;
}

/** The shell's horizontal split that holds `panel`'s side area (null when not attached). */
function splitOf(panel: Widget): { split: Split; index: number } | null {
  let child: Widget = panel;
  for (let w = panel.parent; w; child = w, w = w.parent) {
    if ('setRelativeSizes' in w && 'widgets' in w) {
      const split = w as Split;
      const index = split.widgets.indexOf(child);
      return split.widgets.length === 3 && index === 2 ? { split, index } : null;
    }
  }
  return null;
}

/** Make room for `panel` (shown in the right side area) beside the notebook. */
export function makeRoom(panel: Widget, shell: JupyterFrontEnd.IShell): void {
  if (!panel.isVisible) {
    return;
  }
  const narrow = window.innerWidth <= NARROW_PX;
  const labShell = shell as JupyterFrontEnd.IShell & { collapseLeft?: () => void; leftCollapsed?: boolean };
  if (narrow && labShell.collapseLeft && labShell.leftCollapsed === false) {
    labShell.collapseLeft();
  }
  const found = splitOf(panel);
  if (!found) {
    return;
  }
  const [left, dock, right] = found.split.widgets;
  const space = found.split.node.clientWidth;
  const leftShown = left.isVisible;
  const leftPx = leftShown ? left.node.offsetWidth : Math.max(left.node.offsetWidth, LEFT_HINT_PX);
  const rightPx = Math.max(
    MIN_PANEL_PX,
    Math.min(
      Math.max(right.node.offsetWidth, MIN_SHARE * window.innerWidth),
      MAX_SHARE * window.innerWidth,
      space - (leftShown ? leftPx : 0) - MIN_NOTEBOOK_PX
    )
  );
  if (Math.abs(rightPx - right.node.offsetWidth) < 2 && dock.node.offsetWidth >= MIN_NOTEBOOK_PX) {
    return;
  }
  found.split.setRelativeSizes([leftPx, Math.max(space - leftPx - rightPx, 1), rightPx]);
}

/**
 * Canvas: the viewport under the bars (`fb-viewport`): the scene (scene.ts)
 * with its camera and focus (focus.ts), the message over it, the details
 * pane of the selection (details.ts), the hover tooltip (tooltip.ts) and the
 * legend (badges.ts).
 *
 * It draws each frame laid out, paints the run shown on the boxes drawn
 * (their status and badges, the loops' counters: features/loops/, the
 * queues' marks: features/queues/), and says what a click means: a
 * cluster's title closes its scope, a box selects its op or opens its group
 * (a "more" box: the next page), the background clears the selection.
 */

import type { Group, More } from '../model/hierarchy';
import type { Frame } from '../layout/frame';
import { html } from '../paint/dom';
import { Scene } from '../paint/scene';
import { Legend } from '../paint/badges';
import { Focus } from '../viewport/focus';
import { showDetails } from '../features/details/details';
import { Tooltip } from '../features/details/tooltip';
import { paintFrames } from '../features/loops/loops';
import { paintQueues } from '../features/queues/queues';
import type { Shown } from './shown';

/** What the canvas asks of the view. */
export interface CanvasHost {
  /** Select an op or group by name ("": clear the selection). */
  select(name: string): void;
  /** Select an op and bring it into view (a link in the details pane). */
  goTo(name: string): void;
  /** Lay out again (a group was opened or closed). */
  relayout(): void;
  /** The whole graph does not fit at the scale it must: fold it, and lay out again; false if it cannot. */
  foldToFit(): boolean;
}

export class Canvas {
  readonly viewport: HTMLDivElement;
  readonly scene: Scene;
  readonly focus: Focus;
  private readonly details: HTMLDivElement;
  private readonly tooltip: Tooltip;
  private readonly legend: Legend;

  /** `uid` tells the views on one page apart (scene.ts). */
  constructor(
    root: HTMLElement,
    uid: number,
    private readonly shown: Shown,
    private readonly host: CanvasHost
  ) {
    const vp = (this.viewport = html('div', 'fb-viewport', root));
    this.scene = new Scene(vp, uid);
    this.details = html('div', 'fb-details', vp);
    this.details.hidden = true;
    this.tooltip = new Tooltip(vp);
    this.legend = new Legend(root); // a strip under the graph, never over its boxes
    this.focus = new Focus(vp, this.scene, {
      boxFor: name => shown.boxFor(name),
      groupOf: key => shown.h.groups.get(key),
      foldToFit: () => host.foldToFit()
    });
    this.focus.camera.installPointer({
      click: target => this.click(target),
      hover: ev => this.hover(ev),
      leave: () => this.tooltip.hide()
    });
  }

  /** Show `text` over the scene; without, a hint when the graph has no ops, else nothing. */
  showMessage(text?: string): void {
    this.scene.showMessage(text, this.shown.h.root.opCount === 0);
  }

  /** Draw a frame laid out (the view paints the run on it next). */
  draw(frame: Frame): void {
    this.scene.draw(frame, this.shown.h);
    this.tooltip.hide();
    this.showMessage();
  }

  /** Paint the run shown on the boxes drawn: status and badges, the loops' counters, the queues' marks, the legend. */
  paint(): void {
    const shown = this.shown;
    const ov = shown.overlay;
    const maxTime = this.scene.paint(v => ov.box(v, shown.openings.leavesOf));
    paintFrames(this.scene.el, shown.h, ov.run);
    paintQueues(this.scene.el, ov.run, n => shown.keyOf(n));
    this.legend.update(maxTime, ov.placement);
  }

  /** Mark the selection's box and show it in the details pane. */
  showSelected(): void {
    this.markSelected();
    this.renderDetails();
  }

  /** Mark the selection's box (none: clear the mark). */
  markSelected(): void {
    this.scene.markSelected(this.shown.selectedBox());
  }

  /** Show the selection again in the details pane, if it is open (the run shown changed). */
  refreshDetails(): void {
    if (this.shown.selected && !this.details.hidden) {
      this.renderDetails();
    }
  }

  /** Mark the boxes standing for search's matches; the one at `current` as the match shown. */
  markMatches(matches: string[], current: number): void {
    this.scene.markMatches(this.shown.frame ? matches.map(m => this.shown.boxFor(m)) : [], current);
  }

  /** Briefly highlight the box of an op. */
  flash(name: string): void {
    this.scene.flash(this.shown.boxFor(name));
  }

  dispose(): void {
    this.focus.dispose();
    this.scene.dispose();
  }

  private renderDetails(): void {
    showDetails(this.details, this.shown.subject(), {
      h: this.shown.h,
      ov: this.shown.overlay,
      go: n => this.host.goTo(n),
      close: () => this.host.select('')
    });
  }

  private click(target: Element): void {
    const head = target.closest('.fb-cluster-head');
    if (head) {
      const key = head.getAttribute('data-name') ?? '';
      if (this.shown.h.groups.has(key)) {
        this.shown.openings.set(key, false);
        this.focus.hold(key);
        this.host.relayout();
      }
      return;
    }
    if (!target.closest('.fb-node')) {
      if (this.shown.selected) {
        this.host.select('');
      }
      return;
    }
    const v = this.scene.boxAt(target);
    if (!v) {
      return;
    }
    if (v.type === 'leaf') {
      this.host.select(v.key);
    } else {
      this.toggle(v);
    }
  }

  /** Open or close a group's box; show the next page of a "more" box. */
  private toggle(v: Group | More): void {
    const openings = this.shown.openings;
    if (v.type === 'more') {
      openings.more(v.parent);
    } else if (v.type === 'group') {
      openings.set(v.key, !openings.isExpanded(v));
    }
    this.focus.hold(v.key);
    this.host.relayout();
  }

  private hover(ev: PointerEvent): void {
    const v = this.scene.boxAt(ev.target as Element);
    if (v) {
      this.tooltip.show(v, ev, this.shown.overlay);
    } else {
      this.tooltip.hide();
    }
  }
}

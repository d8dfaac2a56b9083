/**
 * Queues as drawn: how full each queue is, and which ops wait for what (the
 * run state's `queues`, protocol/queues.ts).
 *
 * The box standing for a queue's op (FIFOQueueV2, ...) carries a pill at
 * its bottom edge with the queue's level, "3 / 10" (size / capacity;
 * "closed" once closed). A box standing for an op that waits (a dequeue
 * from an empty queue, an enqueue into a full one) gets an amber outline
 * (`fb-waiting`) and, under it, an hourglass and "waiting: an element of
 * queue 'q'". The kernel reads the levels whenever it sends, at its usual
 * push rate while a run waits; after the run they stay as last sent.
 *
 * Like the loops' counters (features/loops/), painting only sets text, sizes and
 * classes on the boxes already drawn (scene.ts), never a layout.
 */

import { svg } from '../../paint/dom';
import { clip, textWidth } from '../../paint/text';
import type { QueueLevel, QueuesRun } from '../../protocol/queues';
import type { RunState } from '../../protocol/run';

const PILL_PX = 9.5; // the level pill's type, as the time pill's (badges.ts)
const PRESENT_PX = 16; // in present mode
const WAIT_MAX = 60; // the longest "waiting: ..." text drawn (the whole on hover)

/** "1,000". */
function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** "3 / 10", "3 queued" (unbounded), "closed", "closed · 3 left". */
export function levelText(l: QueueLevel): string {
  if (l.closed) {
    return l.size > 0 ? `closed \u00B7 ${count(l.size)} left` : 'closed';
  }
  return l.capacity === null ? `${count(l.size)} queued` : `${count(l.size)} / ${count(l.capacity)}`;
}

/** What one drawn box says: the levels of the queues it stands for, what its ops wait for. */
interface Mark {
  levels: string[];
  waits: string[];
}

function marksOf(q: QueuesRun, keyOf: (name: string) => string | undefined): Map<string, Mark> {
  const out = new Map<string, Mark>();
  const mark = (name: string): Mark | undefined => {
    const key = keyOf(name);
    if (key === undefined) {
      return undefined;
    }
    let m = out.get(key);
    if (!m) {
      out.set(key, (m = { levels: [], waits: [] }));
    }
    return m;
  };
  for (const [name, l] of Object.entries(q.levels)) {
    mark(name)?.levels.push(levelText(l));
  }
  for (const [name, what] of Object.entries(q.waiting)) {
    const m = mark(name);
    if (m && !m.waits.includes(what)) {
      m.waits.push(what);
    }
  }
  return out;
}

/**
 * Set every drawn box's queue marks for `run`: `keyOf(op name)` is the key
 * of the box standing for the op (a collapsed scope's, when it is inside).
 */
export function paintQueues(scene: Element, run: RunState, keyOf: (name: string) => string | undefined): void {
  const q = run.queues;
  const marks = marksOf(q, keyOf);
  const px = scene.closest('.fb-present') ? PRESENT_PX : PILL_PX;
  for (const el of scene.querySelectorAll<SVGGElement>('.fb-node')) {
    const m = marks.get(el.getAttribute('data-name') ?? '');
    if (!m && !el.querySelector('.fb-queue-level, .fb-wait')) {
      continue; // the common case: nothing to set, nothing to clear
    }
    const hatch = el.querySelector('.fb-hatch');
    const w = Number(hatch?.getAttribute('width') ?? 0);
    const h = Number(hatch?.getAttribute('height') ?? 0);
    const pillH = levelPill(el, m ? m.levels.join(', ') : '', w, h, px);
    waitText(el, m ? m.waits : [], w, h + pillH, px);
  }
}

/** The level pill at a box's bottom edge ('' removes it); how far it reaches below the box. */
function levelPill(el: SVGGElement, text: string, w: number, h: number, px: number): number {
  let pill = el.querySelector<SVGGElement>('.fb-queue-level');
  if (!text) {
    pill?.remove();
    return 0;
  }
  if (!pill) {
    pill = svg('g', { class: 'fb-queue-level' }, el);
    svg('rect', { rx: 7 }, pill);
    svg('text', {}, pill);
  }
  const t = pill.querySelector('text')!;
  const height = px + 4.5;
  if (t.textContent !== text || pill.dataset.px !== String(px)) {
    t.textContent = text;
    pill.dataset.px = String(px);
    const pw = textWidth(text, px) + 12;
    const r = pill.querySelector('rect')!;
    r.setAttribute('x', ((w - pw) / 2).toFixed(1));
    r.setAttribute('y', (h - height / 2).toFixed(1));
    r.setAttribute('width', pw.toFixed(1));
    r.setAttribute('height', height.toFixed(1));
    r.setAttribute('rx', (height / 2).toFixed(1));
    t.setAttribute('x', (w / 2).toFixed(1));
    t.setAttribute('y', h.toFixed(1));
    t.setAttribute('style', `font-size:${px}px`);
  }
  return height / 2;
}

/**
 * The amber outline, and under the box an hourglass and "waiting: ..." (its
 * whole text on hover), for a box whose ops wait (none: cleared).
 */
function waitText(el: SVGGElement, waits: string[], w: number, below: number, px: number): void {
  el.classList.toggle('fb-waiting', waits.length > 0);
  let g = el.querySelector<SVGGElement>('.fb-wait');
  if (waits.length === 0) {
    g?.remove();
    return;
  }
  const full = `waiting: ${waits.join('; ')}`;
  if (!g) {
    g = svg('g', { class: 'fb-wait' }, el);
    svg('title', {}, g);
    svg('path', { class: 'fb-wait-icon' }, g);
    svg('text', {}, g);
  }
  if (g.dataset.full === full && g.dataset.px === String(px)) {
    return;
  }
  g.dataset.full = full;
  g.dataset.px = String(px);
  const size = px + 1.5;
  const text = clip(full, WAIT_MAX);
  const y = below + size + 2; // the text's middle
  const icon = size * 0.8; // the hourglass's height; its width is 0.7 of that
  const tw = textWidth(text, size) * 1.08; // bold
  const gap = size * 0.3;
  const x0 = w / 2 - (icon * 0.7 + gap + tw) / 2; // the hourglass, then the text, centred as one
  g.querySelector('title')!.textContent = full;
  const t = g.querySelector('text')!;
  t.textContent = text;
  t.setAttribute('x', (x0 + icon * 0.7 + gap).toFixed(1)); // text-anchor: start (queues.css)
  t.setAttribute('y', y.toFixed(1));
  t.setAttribute('style', `font-size:${size}px`);
  const hw = icon * 0.35; // two triangles meeting at their tips
  const top = y - icon / 2;
  const cx = x0 + hw;
  g.querySelector('path')!.setAttribute(
    'd',
    `M${(cx - hw).toFixed(1)},${top.toFixed(1)}h${(2 * hw).toFixed(1)}L${cx.toFixed(1)},${y.toFixed(1)}Z` +
      `M${cx.toFixed(1)},${y.toFixed(1)}L${(cx + hw).toFixed(1)},${(top + icon).toFixed(1)}h${(-2 * hw).toFixed(1)}Z`
  );
}

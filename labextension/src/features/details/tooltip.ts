/**
 * Tooltip: what a box is, shown beside the pointer while it is over the box
 * (kept inside the viewport). Plain DOM built with textContent.
 */

import type { Visible } from '../../model/hierarchy';
import { html } from '../../paint/dom';
import type { Overlay } from '../../model/overlay';
import { formatTime } from '../../paint/text';
import { groupKind, origin } from './details';

export class Tooltip {
  private readonly el: HTMLDivElement;

  constructor(private readonly viewport: HTMLElement) {
    this.el = html('div', 'fb-tooltip', viewport);
    this.el.hidden = true;
  }

  hide(): void {
    this.el.hidden = true;
  }

  /** Show box `v` (its content written once while the pointer stays on it) beside the pointer. */
  show(v: Visible, ev: PointerEvent, ov: Overlay): void {
    const tip = this.el;
    if (tip.hidden || tip.dataset.key !== v.key) {
      tooltipContent(tip, v, ov);
      tip.dataset.key = v.key;
      tip.hidden = false;
    }
    const r = this.viewport.getBoundingClientRect();
    let x = ev.clientX - r.left + 14;
    let y = ev.clientY - r.top + 16;
    const w = tip.offsetWidth;
    const hgt = tip.offsetHeight;
    if (x + w > r.width - 4) {
      x = Math.max(4, ev.clientX - r.left - w - 10);
    }
    if (y + hgt > r.height - 4) {
      y = Math.max(4, ev.clientY - r.top - hgt - 10);
    }
    tip.style.left = `${x}px`;
    tip.style.top = `${y}px`;
  }
}

/** The hover tooltip's content for a box. */
function tooltipContent(tip: HTMLElement, v: Visible, ov: Overlay): void {
  tip.replaceChildren();
  if (v.type === 'more') {
    html('div', 'fb-tip-title', tip, `${v.hidden} more in ${v.parent.key || 'the graph'}`);
    html('div', 'fb-tip-line', tip, 'click to show the next ones');
    return;
  }
  if (v.type === 'group') {
    html('div', 'fb-tip-title', tip, v.kind === 'statement' ? (v.code ?? v.short) : v.key);
    html('div', 'fb-tip-line', tip, `${groupKind(v)} \u00B7 ${v.opCount} ops \u00B7 click to expand`);
    return;
  }
  const n = v.node;
  if (v.members) {
    html('div', 'fb-tip-title', tip, `${v.members.length} copies → ${v.copy?.dst_device ?? '?'}`);
    for (const m of v.members.slice(0, 8)) {
      html('div', 'fb-tip-line', tip, m.key);
    }
    html('div', 'fb-tip-line', tip, 'click for details');
    return;
  }
  html('div', 'fb-tip-title', tip, `${n.op}  ${n.name}`);
  const c = v.copy;
  if (c) {
    html('div', 'fb-tip-line', tip, `${c.src_device} → ${c.dst_device}: ${c.tensor}`);
    const to = [...c.readers, ...(c.fetch ? ['the fetch'] : [])];
    html('div', 'fb-tip-line', tip, `for ${to.slice(0, 4).join(', ')}${to.length > 4 ? ', …' : ''}`);
  }
  for (const [i, [dtype, shape]] of n.outputs.entries()) {
    html('div', 'fb-tip-line', tip, `out ${i}: ${dtype} ${shape}`);
  }
  const ranOn = ov.device(n.name);
  if (ranOn && !c) {
    html('div', 'fb-tip-line', tip, `ran on: ${ranOn}`);
  }
  if (n.device && !c) {
    html('div', 'fb-tip-line', tip, `${ranOn ? 'asked for' : 'device'}: ${n.device}`);
  }
  const o = c ? '' : origin(n);
  if (o) {
    html('div', 'fb-tip-line', tip, o);
  }
  if (n.code) {
    html('pre', 'fb-tip-code', tip, n.code);
  }
  const t = ov.time(n.name);
  if (t !== null) {
    html('div', 'fb-tip-line', tip, `time: ${formatTime(t)}`);
  }
  const val = ov.value(n.name);
  if (val !== null) {
    html('pre', 'fb-tip-code', tip, val);
  }
  if (ov.run.error && ov.run.error.node === n.name) {
    html('div', 'fb-tip-error', tip, ov.run.error.message);
  }
  if (n.stale) {
    html('div', 'fb-tip-line fb-tip-stale', tip, 'stale: re-run its cell');
  }
}


/**
 * What a run adds to the drawn boxes, and the legend that explains it.
 *
 * `drawBadges` keeps one box's run decorations in step with its BoxState:
 * the heat strip and time pill, the device strip and pill, the stale pill
 * and the error text. It changes the SVG already drawn (draw.ts made the
 * box) and creates a decoration only when first needed, so a run's updates
 * cost attribute writes, never a layout.
 *
 * `Legend` is the corner box naming the heat scale's maximum and the
 * devices of the run shown, each on its colour.
 */

import { html, svg } from './dom';
import { anyTask, taskOrder, tintByTask } from '../features/tasks/tasks';
import { formatTime, textWidth } from './text';
import { HEAT_GRADIENT, deviceColor, heatColor } from './colours';
import type { BoxState } from '../model/overlay';

/** A laid-out box's size. */
interface Size {
  w: number;
  h: number;
}

/** The transform that scales by `f` about the point (x, y) ('' at 1). */
function scaleAbout(x: number, y: number, f: number): string {
  return f === 1 ? '' : `translate(${x},${y}) scale(${f}) translate(${-x},${-y})`;
}

/**
 * Time badge, heat strip, device badge, stale badge and error text of one
 * box (`device`: the device to name, '' for none). The pills are drawn at
 * 9.5 px and scaled by `f` (present mode: to 16 px) about the box's top
 * right corner (time) or top left corner (device, stale).
 */
export function drawBadges(
  el: SVGGElement,
  p: Size,
  st: BoxState,
  maxTime: number,
  device: string,
  f = 1
): void {
  const heat = el.querySelector('.fb-heat');
  let badge = el.querySelector<SVGGElement>('.fb-time-badge');
  if (st.timeUs !== null && maxTime > 0) {
    heat?.setAttribute('fill', heatColor(st.timeUs / maxTime));
    heat?.classList.add('fb-on');
    const text = formatTime(st.timeUs);
    if (!badge) {
      badge = svg('g', { class: 'fb-time-badge' }, el);
      svg('rect', { class: 'fb-time-bg', height: 14, rx: 7 }, badge);
      svg('text', { class: 'fb-time' }, badge);
    }
    const t = badge.querySelector('text')!;
    if (t.textContent !== text) {
      t.textContent = text;
      const w = text.length * 5.6 + 10;
      const r = badge.querySelector('rect')!;
      r.setAttribute('width', w.toFixed(1));
      r.setAttribute('x', (p.w - w + 6).toFixed(1));
      r.setAttribute('y', '-8');
      t.setAttribute('x', (p.w - w / 2 + 6).toFixed(1));
      t.setAttribute('y', '2.5');
    }
    badge.setAttribute('transform', scaleAbout(p.w + 6, -1, f));
  } else {
    heat?.classList.remove('fb-on');
    badge?.remove();
    badge = null;
  }
  // where the time pill starts, in the device pill's (unscaled, about x = -6) units
  const timeX = badge ? p.w + 6 - (p.w + 6 - Number(badge.querySelector('rect')!.getAttribute('x'))) * f : Infinity;
  const timeLeft = (timeX + 6) / f - 6;
  const devEnd = deviceBadge(el, device, p, timeLeft);
  el.querySelector('.fb-device-pill')?.setAttribute('transform', scaleAbout(-6, -1, f));
  let stale = el.querySelector('.fb-stale-badge');
  if (st.stale && !stale) {
    stale = svg('g', { class: 'fb-stale-badge' }, el);
    svg('rect', { x: -6, y: -8, width: 34, height: 14, rx: 7 }, stale);
    svg('text', { x: 11, y: 2.5 }, stale).textContent = 'stale';
  } else if (!st.stale && stale) {
    stale.remove();
  }
  if (stale) {
    const shift = devEnd !== null ? `translate(${((devEnd + 6) * f + 2).toFixed(1)},0)` : '';
    stale.setAttribute('transform', `${shift} ${scaleAbout(-6, -1, f)}`.trim());
  }
}

/**
 * The device badge of a box: a strip down its left side and a pill at its
 * top left naming the device, both in the device's colour (the legend
 * names the colours). A box too narrow for the pill beside its time badge
 * (which starts at `timeLeft`) keeps the strip only. Returns where the pill
 * ends, or null without one.
 */
function deviceBadge(el: SVGGElement, device: string, p: Size, timeLeft: number): number | null {
  tintByTask(el, device);
  let dev = el.querySelector<SVGGElement>('.fb-device-badge');
  if (!device) {
    if (dev) {
      dev.remove();
      el.removeAttribute('data-device');
    }
    return null;
  }
  if (!dev) {
    dev = svg('g', { class: 'fb-device-badge' }, el);
    svg('rect', { class: 'fb-device-strip', x: 0, y: 3, width: 3, height: Math.max(0, p.h - 6), rx: 1.5 }, dev);
    const pill = svg('g', { class: 'fb-device-pill' }, dev);
    svg('rect', { y: -8, height: 14, rx: 7 }, pill);
    svg('text', { y: 2.5 }, pill);
  }
  const w = textWidth(device, 9.5) + 12;
  const x = -6;
  const fits = x + w + 2 <= timeLeft;
  dev.querySelector<SVGGElement>('.fb-device-pill')!.style.display = fits ? '' : 'none';
  if (dev.dataset.device !== device) {
    dev.dataset.device = device;
    const colour = deviceColor(device);
    dev.querySelector('.fb-device-strip')!.setAttribute('fill', colour);
    const bg = dev.querySelector('.fb-device-pill rect')!;
    bg.setAttribute('fill', colour);
    bg.setAttribute('x', x.toFixed(1));
    bg.setAttribute('width', w.toFixed(1));
    const t = dev.querySelector('.fb-device-pill text')!;
    t.setAttribute('x', (x + w / 2).toFixed(1));
    t.textContent = device;
    el.setAttribute('data-device', device);
  }
  return fits ? x + w : null;
}

/** The heat scale (0 to the slowest box's time) and the devices of the run shown. */
export class Legend {
  private readonly root: HTMLDivElement;
  private readonly heat: HTMLSpanElement;
  private readonly max: HTMLSpanElement;
  private readonly devices: HTMLSpanElement;
  private placement: Record<string, string> | null = null; // the placement `devices` shows

  constructor(parent: HTMLElement) {
    const root = (this.root = html('div', 'fb-legend', parent));
    root.hidden = true;
    const heat = (this.heat = html('span', 'fb-legend-heat', root));
    html('span', 'fb-legend-title', heat, 'kernel time');
    html('span', 'fb-legend-min', heat, '0');
    const bar = html('span', 'fb-legend-bar', heat);
    bar.style.background = `linear-gradient(to right, ${HEAT_GRADIENT.join(',')})`;
    this.max = html('span', 'fb-legend-max', heat);
    this.devices = html('span', 'fb-legend-devices', root);
  }

  /** Show the heat scale up to `maxTime` µs (none: 0) and the devices of `placement`. */
  update(maxTime: number, placement: Record<string, string>): void {
    this.heat.hidden = maxTime <= 0;
    this.max.textContent = maxTime > 0 ? formatTime(maxTime) : '';
    this.updateDevices(placement);
    this.root.hidden = maxTime <= 0 && this.devices.hidden;
  }

  /** The devices of a placement, each on its colour (redrawn only for a new placement). */
  private updateDevices(placement: Record<string, string>): void {
    if (placement === this.placement) {
      return;
    }
    this.placement = placement;
    const seen = new Set<string>();
    for (const name in placement) {
      seen.add(placement[name]);
    }
    const tasks = anyTask(seen); // a cluster run: tasks, not devices (tasks.ts)
    const byDevice = (a: string, b: string) => (a.startsWith('CPU') ? -1 : b.startsWith('CPU') ? 1 : a < b ? -1 : 1);
    const devices = [...seen].sort(tasks ? taskOrder : byDevice);
    const box = this.devices;
    box.replaceChildren();
    box.hidden = devices.length === 0;
    if (devices.length > 0) {
      html('span', 'fb-legend-title', box, tasks ? 'task' : 'ran on');
      for (const d of devices) {
        html('span', 'fb-device-chip', box, d).style.background = deviceColor(d);
      }
      html('span', 'fb-legend-copy', box, tasks ? 'send/recv' : 'copy');
    }
  }
}

/**
 * The colours a run paints with: the heat scale of kernel times, and each
 * device's (or cluster task's) colour for its badges, chips and legend.
 */

import { taskColour } from '../features/tasks/tasks';

const HEAT: [number, number, number][] = [
  [255, 241, 196],
  [255, 196, 92],
  [245, 124, 0],
  [198, 40, 40]
];

/** Heat colour for a fraction 0..1 of the largest time shown (square-root scale). */
export function heatColor(f: number): string {
  const x = Math.sqrt(Math.max(0, Math.min(1, f))) * (HEAT.length - 1);
  const i = Math.min(HEAT.length - 2, Math.floor(x));
  const t = x - i;
  const c = HEAT[i].map((a, k) => Math.round(a + (HEAT[i + 1][k] - a) * t));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

export const HEAT_GRADIENT = HEAT.map(c => `rgb(${c[0]},${c[1]},${c[2]})`);

const GPU_COLOURS = ['#00897b', '#c2185b', '#3949ab', '#6d4c41', '#00838f', '#ad1457'];

/** The colour of a device's badge: the CPU slate, each GPU its own. */
export function deviceColor(device: string): string {
  const task = taskColour(device); // a task of a cluster run (tasks.ts)
  if (task) {
    return task;
  }
  if (device.startsWith('CPU')) {
    return '#546e7a';
  }
  const m = /^GPU:(\d+)$/.exec(device);
  if (m) {
    return GPU_COLOURS[Number(m[1]) % GPU_COLOURS.length];
  }
  return '#8d6e63'; // mixed, or a device of another kind
}

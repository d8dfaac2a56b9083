/**
 * Runs on a Dask cluster (flowbook/notebook/tasks.py): the run state's
 * `placement` names each op's task ("ps:0", "worker:1") instead of a device,
 * and its `copies` hold the Send/Recv pairs (op "_Send/_Recv") of the edges
 * between tasks. This module says how they look:
 *
 * - a task's colour: Paul Tol's muted scheme (colour-blind safe), ps tasks
 *   warm, workers cool, other jobs grey, every colour dark enough for white
 *   text on a projector (the same lists as flowbook/distributed/dist_repr.py);
 * - an op box is tinted with its task's colour (`tintByTask`: a CSS variable
 *   the stylesheet's `fb-task` rule reads, so run states keep their colours);
 * - a pair's box reads "send → worker:0" (copies.ts draws it on the edge it
 *   splits, as a copy node);
 * - the legend says "task" for the chips and "send/recv" for the pairs.
 */

import type { CopySpec } from '../../protocol/run';

export const SEND_RECV = '_Send/_Recv'; // the op of a Send/Recv pair's box

const TASK_COLOURS: Record<string, string[]> = {
  ps: ['#882255', '#AA4499', '#CC6677'],
  worker: ['#332288', '#117733', '#44AA99', '#999933']
};
const OTHER_COLOURS = ['#555555', '#777777'];

const TASK = /^([A-Za-z_][\w-]*):(\d+)$/;

/** Is `device` a task's short name ("ps:0"), not a device ("CPU:0", "GPU:1")? */
export function isTask(device: string): boolean {
  const m = TASK.exec(device);
  return m !== null && !/^(CPU|GPU|TPU)$/.test(m[1]);
}

/** The colour of task "ps:0", "worker:3" (null for a device). */
export function taskColour(device: string): string | null {
  const m = TASK.exec(device);
  if (!m || !isTask(device)) {
    return null;
  }
  const colours = TASK_COLOURS[m[1]] ?? OTHER_COLOURS;
  return colours[Number(m[2]) % colours.length];
}

/** A light tint of a task's colour for a box's fill: its colour at 18% on white. */
export function taskTint(colour: string): string {
  const n = parseInt(colour.slice(1), 16);
  const mix = (c: number) => Math.round(255 - (255 - c) * 0.18);
  return `rgb(${mix((n >> 16) & 255)},${mix((n >> 8) & 255)},${mix(n & 255)})`;
}

/** Tint box `el` by the task it ran on ('' or a device: no tint). */
export function tintByTask(el: SVGGElement, device: string): void {
  const colour = taskColour(device);
  if (colour) {
    if (el.dataset.task !== device) {
      el.dataset.task = device;
      el.style.setProperty('--fb-task-tint', taskTint(colour));
    }
  } else if (el.dataset.task !== undefined) {
    delete el.dataset.task;
    el.style.removeProperty('--fb-task-tint');
  }
}

/** Whether any of the devices named is a task (the legend speaks of tasks then). */
export function anyTask(devices: Iterable<string>): boolean {
  for (const d of devices) {
    if (isTask(d)) {
      return true;
    }
  }
  return false;
}

/** Order for the legend: ps tasks, then workers, then the rest, each by index. */
export function taskOrder(a: string, b: string): number {
  const rank = (d: string) => (d.startsWith('ps:') ? 0 : d.startsWith('worker:') ? 1 : 2);
  const ka = TASK.exec(a);
  const kb = TASK.exec(b);
  return rank(a) - rank(b) || (ka && kb ? ka[1].localeCompare(kb[1]) || Number(ka[2]) - Number(kb[2]) : a < b ? -1 : 1);
}

/** The label of a pair's box: "send → worker:0", "3 sends → worker:0" (null: not a pair). */
export function sendRecvLabel(spec: CopySpec, n = 1): string | null {
  if (spec.op !== SEND_RECV) {
    return null;
  }
  return `${n === 1 ? 'send' : `${n} sends`} \u2192 ${spec.dst_device || '?'}`;
}

/** "2 copies between devices", or for a cluster run "3 Send/Recv pairs between tasks". */
export function copiesPhrase(copies: CopySpec[]): string {
  const pairs = copies.filter(c => c.op === SEND_RECV).length;
  const rest = copies.length - pairs;
  const parts: string[] = [];
  if (rest > 0) {
    parts.push(`${rest} cop${rest === 1 ? 'y' : 'ies'} between devices`);
  }
  if (pairs > 0) {
    parts.push(`${pairs} Send/Recv pair${pairs === 1 ? '' : 's'} between tasks`);
  }
  return parts.join(' \u00B7 ');
}

/**
 * Queues, as the Python side sends them (the run state's `queues`,
 * flowbook/notebook/queues.py): how full each queue is, and which ops wait
 * for what.
 */

export interface QueueLevel {
  size: number; // elements in the queue now
  capacity: number | null; // null: unbounded
  closed: boolean;
}

export interface QueuesRun {
  levels: Record<string, QueueLevel>; // queue op name -> its level, as last read
  waiting: Record<string, string>; // op name -> what it waits for, now
}

export const EMPTY_QUEUES: QueuesRun = { levels: {}, waiting: {} };

export function normalizeQueues(x: unknown): QueuesRun {
  const o = (x ?? {}) as Partial<QueuesRun>;
  const levels: Record<string, QueueLevel> = {};
  if (o.levels && typeof o.levels === 'object') {
    for (const [k, v] of Object.entries(o.levels)) {
      if (v && typeof v === 'object' && typeof v.size === 'number') {
        const capacity = typeof v.capacity === 'number' ? v.capacity : null;
        levels[k] = { size: v.size, capacity, closed: Boolean(v.closed) };
      }
    }
  }
  const waiting: Record<string, string> = {};
  if (o.waiting && typeof o.waiting === 'object') {
    for (const [k, v] of Object.entries(o.waiting)) {
      waiting[k] = String(v);
    }
  }
  return { levels, waiting };
}

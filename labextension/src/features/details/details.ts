/**
 * The details pane: what the selected op, copy node or group is, and what
 * the last run said of it. Plain DOM built with textContent.
 */

import type { Group, Hierarchy, Leaf } from '../../model/hierarchy';
import { html } from '../../paint/dom';
import type { Overlay } from '../../model/overlay';
import { deviceColor } from '../../paint/colours';
import { formatTime } from '../../paint/text';
import type { NodeSpec } from '../../protocol/graph';

/** Where an op was created: "cell [3], line 2". */
export function origin(n: NodeSpec): string {
  const parts: string[] = [];
  if (n.count !== null) {
    parts.push(`cell [${n.count}]`);
  } else if (n.cell) {
    parts.push('cell');
  }
  if (n.line !== null) {
    parts.push(`line ${n.line}`);
  }
  return parts.join(', ');
}

function shapeOf(h: Hierarchy, tensor: string): string {
  const colon = tensor.lastIndexOf(':');
  const name = colon > 0 ? tensor.slice(0, colon) : tensor;
  const leaf = h.leaves.get(name);
  const spec = leaf?.node.outputs[colon > 0 ? Number(tensor.slice(colon + 1)) || 0 : 0];
  return spec ? `${spec[0]} ${spec[1]}` : '';
}

function row(parent: HTMLElement, label: string, value: string | Node, cls = ''): HTMLElement {
  const r = html('div', 'fb-row' + (cls ? ' ' + cls : ''), parent);
  html('span', 'fb-key', r, label);
  const v = html('span', 'fb-val', r);
  if (typeof value === 'string') {
    v.textContent = value;
  } else {
    v.appendChild(value);
  }
  return r;
}

const STATUS_TEXT: Record<string, string> = {
  idle: '',
  outside: 'not part of the last run',
  fed: 'fed',
  pending: 'pending',
  running: 'running',
  done: 'done',
  error: 'error'
};

/** What the pane needs besides what it shows. */
export interface DetailsContext {
  h: Hierarchy;
  ov: Overlay;
  go: (name: string) => void; // select another op or copy (the pane's links)
  close: () => void; // the pane's close button
}

/**
 * Fill the details pane for an op, a copy node (copies.ts: a leaf with
 * `copy`) or a group; hide it for none.
 */
export function showDetails(pane: HTMLElement, subject: Leaf | Group | undefined, ctx: DetailsContext): void {
  pane.replaceChildren();
  if (!subject) {
    pane.hidden = true;
    return;
  }
  pane.hidden = false;
  const close = html('button', 'fb-details-close', pane, '\u00D7');
  close.title = 'Close';
  close.addEventListener('click', () => ctx.close());
  if (subject.type === 'group') {
    groupDetails(pane, subject, ctx.ov);
  } else if (subject.copy) {
    copyDetails(pane, subject, ctx);
  } else {
    leafDetails(pane, subject, ctx);
  }
}

/** An op: what it is, its last run, its inputs and outputs, where it was created. */
function leafDetails(pane: HTMLElement, leaf: Leaf, { h, ov, go }: DetailsContext): void {
  const n = leaf.node;
  const head = html('div', 'fb-details-head', pane);
  html('span', `fb-kind-badge fb-kind-${n.kind}`, head, n.kind === 'op' ? n.op : `${n.kind} \u00B7 ${n.op}`);
  html('div', 'fb-details-name', head, n.name);
  const status = ov.leafStatus(n.name);
  if (status === 'error' && ov.run.error) {
    html('div', 'fb-details-error', pane, (ov.run.error.nan ? 'NaN/Inf: ' : '') + ov.run.error.message);
  }
  if (n.stale) {
    html(
      'div',
      'fb-details-stale',
      pane,
      'stale: an input of this op was redefined; re-run its cell to rebuild it'
    );
  }
  row(pane, 'op', n.op);
  const ranOn = ov.device(n.name);
  if (ranOn) {
    row(pane, 'ran on', deviceChip(ranOn), 'fb-details-device');
  }
  if (n.device) {
    row(pane, ranOn ? 'asked' : 'device', n.device);
  }
  runRows(pane, ov, n.name, status);
  if (n.inputs.length > 0) {
    html('div', 'fb-section', pane, 'inputs');
    const list = html('ol', 'fb-list', pane);
    for (const tensor of n.inputs) {
      const li = html('li', '', list);
      const colon = tensor.lastIndexOf(':');
      opLink(li, colon > 0 ? tensor.slice(0, colon) : tensor, h, go, tensor);
      const s = shapeOf(h, tensor);
      if (s) {
        html('span', 'fb-shape-text', li, ' ' + s);
      }
    }
  }
  if (n.control.length > 0) {
    html('div', 'fb-section', pane, 'control inputs');
    const list = html('ul', 'fb-list', pane);
    for (const c of n.control) {
      opLink(html('li', '', list), c, h, go);
    }
  }
  if (n.outputs.length > 0) {
    html('div', 'fb-section', pane, 'outputs');
    const list = html('ol', 'fb-list fb-outputs', pane);
    n.outputs.forEach(([dtype, shape], i) => {
      const li = html('li', '', list);
      html('span', '', li, `${n.name}:${i}`);
      html('span', 'fb-shape-text', li, ` ${dtype} ${shape}`);
    });
  }
  const o = origin(n);
  if (o || n.code) {
    html('div', 'fb-section', pane, 'created in');
    if (o) {
      html('div', 'fb-origin', pane, o);
    }
    if (n.code) {
      html('pre', 'fb-code', pane, n.code);
    }
  }
}

/** The last run's rows for one op or copy: its status, kernel time and value preview. */
function runRows(pane: HTMLElement, ov: Overlay, name: string, status: string): void {
  if (STATUS_TEXT[status]) {
    row(pane, 'status', STATUS_TEXT[status]);
  }
  const t = ov.time(name);
  if (t !== null) {
    row(pane, 'time', formatTime(t), 'fb-details-time');
  }
  const v = ov.value(name);
  if (v !== null) {
    row(pane, 'value', html('pre', 'fb-value', undefined, v));
  }
}

/** A device name on its badge colour. */
function deviceChip(device: string): HTMLElement {
  const chip = html('span', 'fb-device-chip', undefined, device);
  chip.style.background = deviceColor(device);
  return chip;
}

/** `text` (default: the name) linking to op `name`; plain text when `name` is not an op of the graph. */
function opLink(parent: HTMLElement, name: string, h: Hierarchy, go: (name: string) => void, text = name): void {
  if (h.leaves.has(name)) {
    html('a', 'fb-link', parent, text).addEventListener('click', () => go(name));
  } else {
    html('span', '', parent, text);
  }
}

const COPY_TEXT: Record<string, string> = {
  _CopyHostToDevice: 'host to device',
  _CopyDeviceToHost: 'device to host',
  _CopyDeviceToDevice: 'device to device'
};

/** A copy node: what it copied, between which devices, for whom (a box of several: each of them). */
function copyDetails(pane: HTMLElement, leaf: Leaf, { h, ov, go }: DetailsContext): void {
  const c = leaf.copy!;
  const head = html('div', 'fb-details-head', pane);
  html('span', 'fb-kind-badge fb-kind-copy', head, `copy · ${c.op}`);
  html('div', 'fb-details-name', head, c.name);
  if (leaf.members) {
    html('div', 'fb-details-note', pane, `${leaf.members.length} copies drawn as one box:`);
    const list = html('ul', 'fb-list', pane);
    for (const m of leaf.members) {
      const li = html('li', '', list);
      html('a', 'fb-link', li, m.key).addEventListener('click', () => go(m.key));
    }
    return;
  }
  const status = ov.leafStatus(c.name);
  if (status === 'error' && ov.run.error) {
    html('div', 'fb-details-error', pane, ov.run.error.message);
  }
  row(pane, 'op', c.op);
  const dir = html('span', '', undefined);
  dir.append(deviceChip(c.src_device || '?'), ' → ', deviceChip(c.dst_device || '?'));
  row(pane, 'copies', dir, 'fb-details-device');
  if (COPY_TEXT[c.op]) {
    row(pane, '', COPY_TEXT[c.op]);
  }
  const ranOn = ov.device(c.name);
  if (ranOn) {
    row(pane, 'ran on', ranOn);
  }
  runRows(pane, ov, c.name, status);
  html('div', 'fb-section', pane, 'value copied');
  const src = html('div', 'fb-list-item', pane);
  opLink(src, c.src, h, go);
  const tensorIndex = c.tensor.slice(c.src.length);
  if (tensorIndex) {
    html('span', '', src, tensorIndex);
  }
  const s = shapeOf(h, c.tensor);
  if (s) {
    html('span', 'fb-shape-text', src, ' ' + s);
  }
  if (c.readers.length > 0 || c.fetch) {
    html('div', 'fb-section', pane, 'read by');
    const list = html('ul', 'fb-list', pane);
    for (const r of c.readers) {
      opLink(html('li', '', list), r, h, go);
    }
    if (c.fetch) {
      html('li', 'fb-fetch', list, 'the fetch (back to Python)');
    }
  }
}

/** What a group is, in words: a series, a name scope, or the ops one line of a cell made. */
export function groupKind(g: Group): string {
  return g.kind === 'series' ? 'series' : g.kind === 'statement' ? 'one line of code' : 'name scope';
}

/** A name scope or series: its ops, their time and devices, the commonest op types. */
function groupDetails(pane: HTMLElement, g: Group, ov: Overlay): void {
  const head = html('div', 'fb-details-head', pane);
  html('span', 'fb-kind-badge fb-kind-scope', head, groupKind(g));
  html('div', 'fb-details-name', head, g.kind === 'statement' ? (g.code ?? g.short) : g.key);
  row(pane, 'ops', String(g.opCount));
  const types = new Map<string, number>();
  let time = 0;
  let timed = false;
  for (const l of g.leaves) {
    types.set(l.node.op, (types.get(l.node.op) ?? 0) + 1);
    const t = ov.time(l.key);
    if (t !== null) {
      time += t;
      timed = true;
    }
  }
  if (timed) {
    row(pane, 'time', formatTime(time), 'fb-details-time');
  }
  const placement = ov.placement;
  const devices = new Map<string, number>();
  for (const l of g.leaves) {
    const d = placement[l.key];
    if (d) {
      devices.set(d, (devices.get(d) ?? 0) + 1);
    }
  }
  if (devices.size > 0) {
    const chips = html('span', '', undefined);
    for (const [d, n] of [...devices.entries()].sort((a, b) => b[1] - a[1])) {
      chips.append(deviceChip(d), ` ×${n} `);
    }
    row(pane, 'ran on', chips, 'fb-details-device');
  }
  const top = [...types.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8);
  html('div', 'fb-section', pane, 'op types');
  const list = html('ul', 'fb-list', pane);
  for (const [op, c] of top) {
    html('li', '', list, `${op} \u00D7${c}`);
  }
}

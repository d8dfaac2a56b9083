/**
 * Text on the canvas: the type sizes of the two modes (normal and present),
 * how wide a string is drawn, how a long name is wrapped onto lines, and
 * how a kernel time reads.
 *
 * Sizes live here, not in the style sheet, because the layout needs them
 * before anything is drawn: a box is as big as its text, and the drawing
 * writes the same sizes onto the text it makes (draw.ts).
 *
 * Widths come from a canvas measuring with the view's font; where there is
 * no canvas (a test outside a browser) an estimate per character stands in.
 */

/** The type sizes (px in layout units; on screen times the camera's scale) and spacing of a mode. */
export interface TextStyle {
  present: boolean;
  label: number; // an op's name
  group: number; // a collapsed scope's name
  small: number; // constants and copy nodes
  sub: number; // the second line: op type, "12 ops"
  edge: number; // shape labels on edges
  cluster: number; // an open scope's title
  headH: number; // an open scope's title band
  lineMax: number; // widest line of a box's name before it wraps (px)
  lines: number; // most lines of a name before it is shortened
  opSub: boolean; // ops show their type under their name
  ranksep: number; // Graphviz ranksep (inches): room for edge labels between rows
  badge: number; // the run's pills on a box: time, device, "stale" (badges.ts)
  padTop: number; // room above a box's name for those pills
  edgeLabels: boolean; // edges carry their shapes (else only in their hover title)
  grow: number; // boxes' least sizes, times this (present boxes keep their proportions)
  nodesep: number; // Graphviz nodesep (inches): room between boxes of a row
}

export const NORMAL: TextStyle = {
  present: false,
  label: 12,
  group: 12.5,
  small: 11,
  sub: 10.5,
  edge: 9.5,
  cluster: 11.5,
  headH: 22,
  lineMax: 190,
  lines: 2,
  opSub: true,
  ranksep: 0.42,
  badge: 9.5,
  padTop: 0,
  edgeLabels: true,
  grow: 1,
  nodesep: 0.28
};

/** Present mode: every text at least 16 px at scale 1, which present fits never go below. */
export const PRESENT: TextStyle = {
  present: true,
  label: 18,
  group: 18,
  small: 16,
  sub: 16,
  edge: 16,
  cluster: 17,
  headH: 30,
  lineMax: 210,
  lines: 3,
  opSub: false,
  ranksep: 0.62,
  badge: 16,
  padTop: 10,
  edgeLabels: true,
  grow: 1.25,
  nodesep: 0.28
};

/**
 * Present mode for a graph too big to show whole: the same 16 px and more,
 * rows closer together and no shape labels on edges (their hover title keeps
 * them), so a lesson's graph fits a projector's window.
 */
export const PRESENT_TIGHT: TextStyle = {
  ...PRESENT,
  label: 16,
  group: 16,
  headH: 28,
  ranksep: 0.22,
  padTop: 9,
  edgeLabels: false,
  grow: 0.7,
  nodesep: 0.1
};

export const LINE = 1.3; // line height, times the font size

const FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";
const MONO = "ui-monospace, 'SFMono-Regular', Menlo, Consolas, 'DejaVu Sans Mono', monospace";

let ctx: CanvasRenderingContext2D | null | undefined;
const cache = new Map<string, number>();

/** Estimated width in px of `s` in the sans font at `px`. */
export function textWidth(s: string, px: number): number {
  let w = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    w += c < 128 ? (/[A-Z]|[mwMW@]/.test(s[i]) ? 0.68 : /[ilj.,:;|!'`I\s]/.test(s[i]) ? 0.3 : 0.54) : 1;
  }
  return w * px;
}

/** Width in px of `s` as drawn at `px` (`bold`: weight 600; `mono`: the monospace font). */
export function measure(s: string, px: number, bold = false, mono = false): number {
  const key = `${px}|${bold ? 1 : 0}${mono ? 1 : 0}|${s}`;
  let w = cache.get(key);
  if (w !== undefined) {
    return w;
  }
  if (ctx === undefined) {
    ctx = typeof document === 'undefined' ? null : document.createElement('canvas').getContext('2d');
  }
  if (ctx) {
    ctx.font = `${bold ? 600 : 400} ${px}px ${mono ? MONO : FONT}`;
    w = ctx.measureText(s).width;
  } else {
    w = mono ? s.length * px * 0.62 : textWidth(s, px);
  }
  if (cache.size > 20000) {
    cache.clear();
  }
  cache.set(key, w);
  return w;
}

/** Cut a label to at most `max` characters, keeping both ends. */
export function clip(s: string, max: number): string {
  if (s.length <= max) {
    return s;
  }
  const head = Math.ceil((max - 1) * 0.6);
  return s.slice(0, head) + '\u2026' + s.slice(s.length - (max - 1 - head));
}

/** Cut `s` (keeping both ends) until it is at most `width` px wide at `px`. */
export function clipTo(s: string, width: number, px: number, bold = false): string {
  let n = s.length;
  let out = s;
  while (n > 2 && measure(out, px, bold) > width) {
    n--;
    out = clip(s, n);
  }
  return out;
}

/** Where a name may break: after _ / - . and between a lower-case letter or digit and a capital. */
function pieces(s: string): string[] {
  return s.split(/(?<=[_/.\-])|(?<=[a-z0-9])(?=[A-Z])/).filter(p => p.length > 0);
}

/** A name on lines: `lines` to draw, and whether some of it had to be left out. */
export interface Wrapped {
  lines: string[];
  cut: boolean;
}

/**
 * Wrap `s` onto lines at most `max` px wide (at `px`), breaking where words
 * meet (SparseSoftmax|CrossEntropy|WithLogits); past `maxLines`, the last
 * line keeps the name's end after an ellipsis.
 */
export function wrapName(s: string, px: number, max: number, maxLines: number, bold = false): Wrapped {
  if (measure(s, px, bold) <= max) {
    return { lines: [s], cut: false };
  }
  const lines: string[] = [];
  let line = '';
  for (let p of pieces(s)) {
    while (measure(p, px, bold) > max && p.length > 1) {
      // a piece wider than a line: break it where it must
      let k = p.length - 1;
      while (k > 1 && measure(p.slice(0, k), px, bold) > max) {
        k--;
      }
      if (line) {
        lines.push(line);
        line = '';
      }
      lines.push(p.slice(0, k));
      p = p.slice(k);
    }
    if (line && measure(line + p, px, bold) > max) {
      lines.push(line);
      line = p;
    } else {
      line += p;
    }
  }
  if (line) {
    lines.push(line);
  }
  if (lines.length <= maxLines) {
    return { lines, cut: false };
  }
  const kept = lines.slice(0, maxLines - 1);
  const rest = lines.slice(maxLines - 1).join('');
  let tail = rest;
  while (tail.length > 1 && measure('\u2026' + tail, px, bold) > max) {
    tail = tail.slice(1);
  }
  kept.push('\u2026' + tail);
  return { lines: kept, cut: true };
}

/** "12 µs", "3.4 ms", "1.25 s". */
export function formatTime(us: number): string {
  if (us < 1000) {
    return `${us < 10 ? us.toFixed(1) : Math.round(us)} \u00B5s`;
  }
  if (us < 1e6) {
    const ms = us / 1000;
    return `${ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : Math.round(ms)} ms`;
  }
  return `${(us / 1e6).toFixed(2)} s`;
}

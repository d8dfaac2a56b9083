/**
 * Camera: where the laid-out graph sits in the viewport, and how the pointer moves it.
 *
 * State it owns: `tx`, `ty` (screen position of the scene's origin) and `k`
 * (scale), written to the scene's transform by `apply()`; `needsFit`, set
 * until the first fit of a new graph has happened (a viewport of size 0, in
 * a hidden panel, defers it) and cleared once the user zooms; `moved`, set
 * when the user pans or zooms and cleared by a fit (until then the view
 * refits when its viewport resizes, focus.ts); `minFit`, the smallest scale
 * a readable fit goes to (present mode: 1, where every text is >= 16 px);
 * `centreWide`, whether a fit too wide for the view shows its middle
 * (present mode) or its left edge; `minWhole`, the smallest scale at which
 * the whole graph is framed rather than the cell just run (focus.ts), and
 * `framesCell`, whether a graph too big for that is shown by the cell just
 * run (off in present mode: it shows the whole graph's top, big).
 *
 * Dragging pans; the wheel zooms about the pointer; a press released
 * without moving is a click, and moves without a press are hovers: both go
 * back to the view through `PointerHandlers`, which decides what was hit.
 */

export const MIN_READABLE = 0.5; // the first view of a big graph zooms out no further
export const MIN_WHOLE = 0.25; // the whole graph is framed down to this scale (its shape shows; names in the tooltip)
const MIN_SCALE = 0.03;
const MAX_FIT = 1.3; // a fit zooms in no further
const MAX_SCALE = 4;
export const FIT_PAD = 24; // px kept free around a fitted graph
const DRAG_PX = 4; // a press that moves further is a drag, not a click

/** A rectangle of the scene. */
export interface Bounds {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** What the view does with the pointer events the camera does not use itself. */
export interface PointerHandlers {
  click(target: Element): void;
  hover(ev: PointerEvent): void;
  /** The pointer left the canvas, or a drag started: hide hover feedback. */
  leave(): void;
}

export class Camera {
  tx = 0;
  ty = 0;
  k = 1;
  needsFit = true;
  moved = false; // the user panned or zoomed since the last fit
  minFit = MIN_READABLE; // a readable fit zooms out no further
  centreWide = false; // a fit wider than the view shows its middle, not its left edge (present mode)
  minWhole = MIN_WHOLE; // the whole graph is framed down to this scale
  framesCell = true; // a graph too big to frame whole is shown by the cell just run
  pad = FIT_PAD; // px kept free around a fitted graph (present mode keeps less: its room is dear)

  constructor(
    private readonly svgEl: SVGSVGElement,
    private readonly scene: SVGGElement,
    private readonly viewport: HTMLElement
  ) {}

  /** Write the position and scale to the scene. */
  apply(): void {
    this.scene.setAttribute('transform', `translate(${this.tx.toFixed(1)},${this.ty.toFixed(1)}) scale(${this.k.toFixed(4)})`);
  }

  /**
   * Fit a `width` x `height` scene in view (`readable`: not below a legible
   * scale; then show its top left). Deferred (needsFit stays set) while the
   * viewport has no size.
   */
  fit(width: number, height: number, readable = false): void {
    this.fitBox({ x1: 0, y1: 0, x2: width, y2: height }, readable ? this.minFit : MIN_SCALE);
  }

  /** The scale that fits a `width` x `height` part of the scene in view (0: the viewport has no size). */
  fitScale(width: number, height: number): number {
    const vw = this.viewport.clientWidth;
    const vh = this.viewport.clientHeight;
    return vw > 0 && vh > 0 ? this.scaleFor(vw, vh, width, height) : 0;
  }

  /**
   * Fit the part `b` of the scene in view, at a scale from `least` to `most`
   * (centred on each axis where it fits, else from its padded top or left edge).
   */
  fitBox(b: Bounds, least: number, most = MAX_FIT): void {
    const vw = this.viewport.clientWidth;
    const vh = this.viewport.clientHeight;
    if (vw === 0 || vh === 0) {
      this.needsFit = true;
      return;
    }
    this.needsFit = false;
    this.moved = false;
    const pad = this.pad;
    const width = b.x2 - b.x1;
    const height = b.y2 - b.y1;
    this.k = Math.max(least, Math.min(most, this.scaleFor(vw, vh, width, height)));
    const k = this.k;
    this.tx = (width * k <= vw - 2 * pad || this.centreWide ? (vw - width * k) / 2 : pad) - b.x1 * k;
    this.ty = (height * k <= vh - 2 * pad ? (vh - height * k) / 2 : pad) - b.y1 * k;
    this.apply();
  }

  private scaleFor(vw: number, vh: number, width: number, height: number): number {
    const pad = this.pad;
    return Math.min(MAX_FIT, (vw - 2 * pad) / Math.max(width, 1), (vh - 2 * pad) / Math.max(height, 1));
  }

  /** Center the scene point (x, y); zoom in if the view is far out. */
  centerOn(x: number, y: number): void {
    this.k = Math.max(this.k, 0.8, this.minFit);
    this.tx = this.viewport.clientWidth / 2 - x * this.k;
    this.ty = this.viewport.clientHeight / 2 - y * this.k;
    this.apply();
  }

  /** Whether the scene point (x, y) is outside the viewport (or within 20 px of its edge). */
  isOffscreen(x: number, y: number): boolean {
    const sx = this.tx + x * this.k;
    const sy = this.ty + y * this.k;
    return sx < 20 || sy < 20 || sx > this.viewport.clientWidth - 20 || sy > this.viewport.clientHeight - 20;
  }

  /** Where the scene point (x, y) is on screen, inside the viewport. */
  toScreen(x: number, y: number): { sx: number; sy: number } {
    return { sx: this.tx + x * this.k, sy: this.ty + y * this.k };
  }

  /** Move the scene so that its point (x, y) is at the screen point (sx, sy). */
  pin(x: number, y: number, sx: number, sy: number): void {
    this.tx = sx - x * this.k;
    this.ty = sy - y * this.k;
    this.apply();
  }

  /** Pan by dragging, zoom with the wheel; clicks and hovers go to `handlers`. */
  installPointer(handlers: PointerHandlers): void {
    const svgEl = this.svgEl;
    let down: { x: number; y: number; tx: number; ty: number; id: number } | null = null;
    let moved = false;
    svgEl.addEventListener('pointerdown', ev => {
      if (ev.button !== 0) {
        return;
      }
      down = { x: ev.clientX, y: ev.clientY, tx: this.tx, ty: this.ty, id: ev.pointerId };
      moved = false;
    });
    svgEl.addEventListener('pointermove', ev => {
      if (down && ev.pointerId === down.id) {
        const dx = ev.clientX - down.x;
        const dy = ev.clientY - down.y;
        if (!moved && Math.hypot(dx, dy) > DRAG_PX) {
          moved = true;
          svgEl.setPointerCapture(ev.pointerId);
          svgEl.classList.add('fb-dragging');
          handlers.leave();
        }
        if (moved) {
          this.moved = true;
          this.tx = down.tx + dx;
          this.ty = down.ty + dy;
          this.apply();
        }
        return;
      }
      handlers.hover(ev);
    });
    const up = (ev: PointerEvent) => {
      if (!down || ev.pointerId !== down.id) {
        return;
      }
      const wasMoved = moved;
      down = null;
      moved = false;
      svgEl.classList.remove('fb-dragging');
      if (svgEl.hasPointerCapture(ev.pointerId)) {
        svgEl.releasePointerCapture(ev.pointerId);
      }
      if (!wasMoved && ev.type === 'pointerup') {
        handlers.click(ev.target as Element);
      }
    };
    svgEl.addEventListener('pointerup', up);
    svgEl.addEventListener('pointercancel', up);
    svgEl.addEventListener('pointerleave', () => handlers.leave());
    svgEl.addEventListener(
      'wheel',
      ev => {
        ev.preventDefault();
        const r = svgEl.getBoundingClientRect();
        const mx = ev.clientX - r.left;
        const my = ev.clientY - r.top;
        const scale = ev.deltaMode === 1 ? 0.05 : 0.0015;
        const f = Math.exp(-ev.deltaY * scale);
        const k = Math.max(MIN_SCALE, Math.min(MAX_SCALE, this.k * f));
        this.tx = mx - ((mx - this.tx) * k) / this.k;
        this.ty = my - ((my - this.ty) * k) / this.k;
        this.k = k;
        this.needsFit = false;
        this.moved = true;
        this.apply();
      },
      { passive: false }
    );
  }
}

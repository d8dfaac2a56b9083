/**
 * The GraphWidget's ES module as a notebook stores it: a loader of about a
 * kilobyte. anywidget keeps a widget's module in the widget's state, and a
 * notebook saves that state for every view shown; the whole view (layout,
 * Graphviz's WebAssembly) is 1.6 MB, so the notebook would carry one copy per
 * `tf.show()`. The view's code lives in flowbook's JupyterLab extension
 * instead (JupyterLab 4, Notebook 7), which leaves `render` on the page
 * (graph-widget.ts, `provideRender`); this loader waits for it, briefly, and
 * renders with it. Where no extension runs (another front end), it says so;
 * there, `FLOWBOOK_EMBED_WIDGET=1` in the kernel's environment sends the
 * whole view with each widget (flowbook/notebook/widget.py).
 */

type Render = (ctx: { model: unknown; el: HTMLElement }) => (() => void) | void;

const RENDER_KEY = Symbol.for('flowbook.graph-widget');
const WAIT_MS = 15000; // the extension activates with the page: this is a bound, not a delay
const POLL_MS = 50;

function provided(): Render | null {
  const found = (globalThis as Record<symbol, { render?: Render } | undefined>)[RENDER_KEY];
  return found && typeof found.render === 'function' ? found.render : null;
}

async function waitForRender(): Promise<Render | null> {
  const start = Date.now();
  let render = provided();
  while (!render && Date.now() - start < WAIT_MS) {
    await new Promise(resolve => setTimeout(resolve, POLL_MS));
    render = provided();
  }
  return render;
}

async function render(ctx: { model: unknown; el: HTMLElement }): Promise<(() => void) | void> {
  const found = await waitForRender();
  if (found) {
    return found(ctx);
  }
  const note = document.createElement('div');
  note.className = 'flowbook-widget-missing';
  note.style.cssText = 'padding:8px 12px;border:1px solid #d0d7de;border-radius:4px;color:#57606a;font:13px sans-serif';
  note.textContent =
    "This graph view needs flowbook's JupyterLab extension (JupyterLab 4 or Notebook 7, " +
    'with flowbook installed where Jupyter runs). In another front end, set FLOWBOOK_EMBED_WIDGET=1 ' +
    "in the kernel's environment to send the whole view with each widget.";
  ctx.el.appendChild(note);
}

export default { render };

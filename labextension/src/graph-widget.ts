/**
 * The front end of flowbook's GraphWidget (anywidget's ES module contract):
 * `render({ model, el })` draws the graph held in the model's traits and
 * returns a cleanup function. Python-side counterpart: flowbook/widget.py.
 *
 * Traits read: graph, run, stepper, history, height, selected, present, optimized
 * (a plan's rewrite: the toggle "as written / as optimised", features/rewrites/).
 * Sent back: `selected` (the clicked op's name, "" to clear), `present`
 * (the toolbar's Present button) and custom messages
 * {action: "step" | "run_to" | "cont" | "reset", node} and
 * {action: "history_run", seq}. Custom messages received: {tick} (runs watched
 * whole since the `run` trait, protocol/run.ts), {history_run}
 * (a kept run asked for) and {replay, seconds} (`widget.replay(run)`).
 */

import { GraphView } from './view/graph-view';
import '../style/graph-view.css';
import '../style/present.css';
import '../style/history.css';
import '../style/loops.css';
import '../style/queues.css';
import '../style/rewrites.css';
import '../style/tasks.css';

interface AnyModel {
  get(name: string): unknown;
  set(name: string, value: unknown): void;
  save_changes(): void;
  send(content: unknown): void;
  on(event: string, cb: () => void): void;
  off(event?: string | null, cb?: (() => void) | null): void;
}

export function render({ model, el }: { model: AnyModel; el: HTMLElement }): () => void {
  el.classList.add('flowbook-widget');
  const view = new GraphView(el, {
    onSelect: name => {
      model.set('selected', name);
      model.save_changes();
    },
    onAction: (action, node) => model.send({ action, node }),
    onPresent: on => {
      model.set('present', on);
      model.save_changes();
    },
    onHistory: seq => model.send({ action: 'history_run', seq })
  });
  const onMsg = (content: unknown) => view.feed.receive(content);
  const handlers: [string, () => void][] = [
    ['change:graph', () => view.setGraph(model.get('graph'))],
    ['change:run', () => view.setRun(model.get('run'))],
    ['change:stepper', () => view.setStepper(model.get('stepper'))],
    ['change:history', () => view.feed.setHistory(model.get('history'))],
    ['change:optimized', () => view.setOptimized(model.get('optimized'))],
    ['change:height', () => view.setHeight(model.get('height'))],
    ['change:present', () => view.setPresent(model.get('present'))],
    [
      'change:selected',
      () => {
        const s = model.get('selected');
        view.select(typeof s === 'string' ? s : '', false);
      }
    ]
  ];
  view.setHeight(model.get('height'));
  view.setPresent(model.get('present'));
  view.setRun(model.get('run'));
  view.setStepper(model.get('stepper'));
  view.setGraph(model.get('graph'));
  view.feed.setHistory(model.get('history'));
  view.setOptimized(model.get('optimized'));
  model.on('msg:custom', onMsg as () => void);
  for (const [event, cb] of handlers) {
    model.on(event, cb);
  }
  return () => {
    for (const [event, cb] of handlers) {
      model.off(event, cb);
    }
    model.off('msg:custom', onMsg as () => void);
    view.dispose();
  };
}

/** Where the JupyterLab extension leaves `render` for the widget's loader (widget-loader.ts). */
export const RENDER_KEY = Symbol.for('flowbook.graph-widget');

/** Let widgets shown in this page use this copy of the view (the extension calls it once). */
export function provideRender(): void {
  (globalThis as Record<symbol, unknown>)[RENDER_KEY] = { render };
}

export default { render };

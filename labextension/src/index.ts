/**
 * Flowbook's JupyterLab extension: a side panel that always shows the graph
 * of the current notebook's kernel, drawn by the same GraphView as the
 * notebook widget, and commands for it.
 *
 * The panel talks to the kernel through a comm, target "flowbook.graph",
 * that it opens itself. Python answers with messages holding any of
 * {graph, run, stepper}; the panel sends {selected} and {action, node}.
 * The comm is (re)opened when the current notebook or its kernel changes,
 * after a restart, and after a cell runs while it is not open (so
 * `%load_ext flowbook` connects without further ado).
 *
 * Clicking an op scrolls the notebook to the cell that created it, makes it
 * the active cell and outlines it (class `flowbook-highlighted-cell`).
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, type NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { GraphView } from './view/graph-view';
import type { StepAction } from './view/types';

export const COMM_TARGET = 'flowbook.graph';
export const HIGHLIGHT_CLASS = 'flowbook-highlighted-cell';
const HIGHLIGHT_MS = 4000;

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">
<g class="jp-icon3" fill="#616161"><rect x="5.5" y="1" width="5" height="3.6" rx="1"/>
<rect x="1" y="11.4" width="5" height="3.6" rx="1"/><rect x="10" y="11.4" width="5" height="3.6" rx="1"/>
<path d="M7.6 4.6h0.8v3h3.6v3.8h-0.8v-3h-6.4v3h-0.8v-3.8h3.6z"/></g></svg>`;

const flowbookIcon = new LabIcon({ name: 'flowbook:graph', svgstr: ICON_SVG });

/** The side panel: a status line and a GraphView fed by the kernel's comm. */
class GraphPanel extends Widget {
  readonly view: GraphView;
  private readonly status: HTMLDivElement;

  constructor(
    private readonly tracker: INotebookTracker,
    private readonly shell: JupyterFrontEnd.IShell
  ) {
    super();
    this.id = 'flowbook-graph-panel';
    this.title.icon = flowbookIcon;
    this.title.caption = 'Flowbook graph';
    this.addClass('flowbook-panel');
    this.status = document.createElement('div');
    this.status.className = 'fb-panel-status';
    this.node.appendChild(this.status);
    const body = document.createElement('div');
    body.className = 'fb-panel-body';
    this.node.appendChild(body);
    this.view = new GraphView(body, {
      onSelect: (name, node) => {
        this.send({ selected: name });
        if (node?.cell) {
          void this.jumpToCell(node.cell);
        }
      },
      onAction: (action: StepAction, node) => this.send({ action, node })
    });
    this.view.fillParent();
    this.setStatus('No notebook open.');
  }

  /** Set by the connection: how to send to the kernel (null when not connected). */
  sender: ((data: Record<string, unknown>) => void) | null = null;

  private send(data: Record<string, unknown>): void {
    this.sender?.(data);
  }

  setStatus(text: string, code?: string, after?: string): void {
    this.status.replaceChildren();
    this.status.append(text);
    if (code) {
      const c = document.createElement('code');
      c.textContent = code;
      this.status.append(c);
    }
    if (after) {
      this.status.append(after);
    }
    this.status.title = this.status.textContent ?? '';
  }

  /** The notebook the panel shows (set by the connection). */
  notebook: NotebookPanel | null = null;

  private highlighted: HTMLElement | null = null;
  private highlightTimer = 0;

  /** Scroll to the cell whose model id is `cellId`, make it active, outline it. */
  async jumpToCell(cellId: string): Promise<void> {
    const panels: NotebookPanel[] = [];
    if (this.notebook) {
      panels.push(this.notebook);
    }
    this.tracker.forEach(p => {
      if (p !== this.notebook) {
        panels.push(p);
      }
    });
    for (const panel of panels) {
      const nb = panel.content;
      const index = nb.widgets.findIndex(c => c.model.id === cellId);
      if (index < 0) {
        continue;
      }
      const cell = nb.widgets[index];
      if (!panel.isVisible) {
        this.shell.activateById(panel.id);
      }
      nb.activeCellIndex = index;
      try {
        await nb.scrollToCell(cell, 'center');
      } catch {
        cell.node.scrollIntoView({ block: 'center' });
      }
      this.clearHighlight();
      cell.node.classList.add(HIGHLIGHT_CLASS);
      this.highlighted = cell.node;
      this.highlightTimer = window.setTimeout(() => this.clearHighlight(), HIGHLIGHT_MS);
      return;
    }
  }

  private clearHighlight(): void {
    window.clearTimeout(this.highlightTimer);
    this.highlighted?.classList.remove(HIGHLIGHT_CLASS);
    this.highlighted = null;
  }

  dispose(): void {
    this.clearHighlight();
    this.view.dispose();
    super.dispose();
  }
}

/** Keeps one comm open to the current notebook's kernel and feeds the panel. */
class Connection {
  private panel: NotebookPanel | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private comm: Kernel.IComm | null = null;
  private connected = false;
  private ranSinceAttempt = false;

  constructor(private readonly view: GraphPanel) {}

  follow(panel: NotebookPanel | null): void {
    if (panel === this.panel) {
      return;
    }
    if (this.panel) {
      this.panel.sessionContext.kernelChanged.disconnect(this.onKernelChanged, this);
      this.panel.disposed.disconnect(this.onPanelDisposed, this);
    }
    this.panel = panel;
    this.view.notebook = panel;
    if (!panel) {
      this.setKernel(null);
      this.view.setStatus('No notebook open.');
      return;
    }
    panel.sessionContext.kernelChanged.connect(this.onKernelChanged, this);
    panel.disposed.connect(this.onPanelDisposed, this);
    this.view.setStatus(`${panel.title.label}: waiting for the kernel\u2026`);
    void panel.sessionContext.ready.then(() => {
      if (this.panel === panel) {
        this.setKernel(panel.sessionContext.session?.kernel ?? null);
      }
    });
  }

  private onPanelDisposed(): void {
    this.follow(null);
  }

  private onKernelChanged(): void {
    this.setKernel(this.panel?.sessionContext.session?.kernel ?? null);
  }

  private setKernel(kernel: Kernel.IKernelConnection | null): void {
    if (kernel === this.kernel) {
      return;
    }
    if (this.kernel) {
      this.kernel.statusChanged.disconnect(this.onStatus, this);
      this.kernel.iopubMessage.disconnect(this.onIopub, this);
    }
    this.closeComm();
    this.kernel = kernel;
    if (!kernel) {
      this.view.setStatus('No kernel.');
      return;
    }
    kernel.statusChanged.connect(this.onStatus, this);
    kernel.iopubMessage.connect(this.onIopub, this);
    this.openComm();
  }

  private onStatus(_: Kernel.IKernelConnection, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this.closeComm();
      this.ranSinceAttempt = true;
      this.view.setStatus('Kernel restarting\u2026');
    } else if (status === 'idle' && !this.connected && this.ranSinceAttempt) {
      this.openComm();
    }
  }

  private onIopub(_: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    if (msg.header.msg_type === 'execute_input') {
      this.ranSinceAttempt = true;
    }
  }

  private openComm(): void {
    const kernel = this.kernel;
    if (!kernel || kernel.isDisposed) {
      return;
    }
    this.closeComm();
    this.ranSinceAttempt = false;
    const label = this.panel?.title.label ?? 'notebook';
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(COMM_TARGET);
    } catch (err) {
      this.view.setStatus(`Cannot open the flowbook comm: ${String(err)}`);
      return;
    }
    this.comm = comm;
    comm.onMsg = msg => {
      if (this.comm !== comm) {
        return;
      }
      if (!this.connected) {
        this.connected = true;
        this.view.setStatus(`${label} \u00B7 default graph`);
        this.view.sender = data => {
          if (!comm.isDisposed) {
            comm.send(data as never);
          }
        };
      }
      const data = (msg.content.data ?? {}) as Record<string, unknown>;
      if ('graph' in data) {
        this.view.view.setGraph(data.graph);
      }
      if ('run' in data) {
        this.view.view.setRun(data.run);
      }
      if ('stepper' in data) {
        this.view.view.setStepper(data.stepper);
      }
    };
    comm.onClose = () => {
      if (this.comm === comm) {
        this.comm = null;
        this.notLoaded();
      }
    };
    this.view.setStatus(`${label}: connecting\u2026`);
    try {
      const future = comm.open({});
      void future.done.catch(() => undefined);
    } catch {
      this.notLoaded();
      return;
    }
    window.setTimeout(() => {
      if (this.comm === comm && !this.connected) {
        this.notLoaded();
      }
    }, 3000);
  }

  private notLoaded(): void {
    this.connected = false;
    this.view.sender = null;
    this.view.setStatus('No flowbook graph here: run ', '%load_ext flowbook', ' or pick the Flowbook kernel.');
  }

  private closeComm(): void {
    const comm = this.comm;
    this.comm = null;
    this.connected = false;
    this.view.sender = null;
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is gone already
      }
    }
  }

  /** Send a stepper action from a command. */
  act(action: StepAction): void {
    this.view.sender?.({ action, node: null });
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'flowbook:plugin',
  description: 'Flowbook graph side panel and commands',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null
  ) => {
    const panel = new GraphPanel(tracker, app.shell);
    const connection = new Connection(panel);
    app.shell.add(panel, 'right', { rank: 700 });
    tracker.currentChanged.connect((_, nb) => connection.follow(nb));
    connection.follow(tracker.currentWidget);

    const open = 'flowbook:open-graph-panel';
    app.commands.addCommand(open, {
      label: 'Show Flowbook Graph Panel',
      caption: 'Show the graph of the current notebook’s kernel in the right side bar',
      icon: flowbookIcon,
      execute: () => {
        if (!panel.isAttached) {
          app.shell.add(panel, 'right', { rank: 700 });
        }
        app.shell.activateById(panel.id);
      }
    });
    const stepCommands: [string, string, StepAction][] = [
      ['flowbook:step', 'Flowbook Stepper: Step', 'step'],
      ['flowbook:continue', 'Flowbook Stepper: Continue', 'cont'],
      ['flowbook:reset', 'Flowbook Stepper: Reset', 'reset']
    ];
    for (const [id, label, action] of stepCommands) {
      app.commands.addCommand(id, { label, execute: () => connection.act(action) });
    }
    if (palette) {
      palette.addItem({ command: open, category: 'Flowbook' });
      for (const [id] of stepCommands) {
        palette.addItem({ command: id, category: 'Flowbook' });
      }
    }
  }
};

export default plugin;

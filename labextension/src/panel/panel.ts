/**
 * The side panel: a status line and a GraphView (view/graph-view.ts) that
 * shows the graph of the current notebook's kernel, fed by a Connection
 * (connection.ts). Its end in the kernel is flowbook/notebook/panel.py,
 * which accepts comms with target TARGET.
 *
 * Shown beside a notebook, it makes room for both (room.ts).
 *
 * Clicking an op scrolls the notebook to the cell that created it, makes it
 * the active cell and outlines it (class `flowbook-highlighted-cell`).
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { LabIcon } from '@jupyterlab/ui-components';
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { makeRoom } from './room';

import { GraphView } from '../view/graph-view';
import type { StepAction } from '../protocol/stepper';

/** The comm target the kernel end registers (flowbook.notebook.panel.TARGET). */
export const TARGET = 'flowbook.graph';
export const HIGHLIGHT_CLASS = 'flowbook-highlighted-cell';
const HIGHLIGHT_MS = 4000;

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">
<g class="jp-icon3" fill="#616161"><rect x="5.5" y="1" width="5" height="3.6" rx="1"/>
<rect x="1" y="11.4" width="5" height="3.6" rx="1"/><rect x="10" y="11.4" width="5" height="3.6" rx="1"/>
<path d="M7.6 4.6h0.8v3h3.6v3.8h-0.8v-3h-6.4v3h-0.8v-3.8h3.6z"/></g></svg>`;

export const flowbookIcon = new LabIcon({ name: 'flowbook:graph', svgstr: ICON_SVG });

/** The side panel: a status line and a GraphView fed by the kernel's comm. */
export class GraphPanel extends Widget {
  /** The view of the graph shown; a fresh one for each kernel connection (`reset`). */
  view: GraphView;
  private readonly status: HTMLDivElement;
  private readonly body: HTMLDivElement;

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
    this.body = document.createElement('div');
    this.body.className = 'fb-panel-body';
    this.node.appendChild(this.body);
    this.view = this.makeView();
    this.setStatus('No notebook open.');
    window.addEventListener('resize', this.onWindowResize);
  }

  /** Shown (opened, or its tab picked): make room for it beside the notebook (room.ts). */
  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.makeRoom();
  }

  /** Make room for the panel beside the notebook, once the shell has laid it out (room.ts). */
  makeRoom(): void {
    requestAnimationFrame(() => makeRoom(this, this.shell));
  }

  private readonly onWindowResize = (): void => {
    window.clearTimeout(this.roomTimer);
    this.roomTimer = window.setTimeout(() => makeRoom(this, this.shell), 150);
  };

  private roomTimer = 0;

  /**
   * Show nothing of what was shown: a fresh, empty view. The connection calls
   * it whenever it talks to another kernel (another notebook, a restart), so
   * no state of one kernel is ever drawn, or kept, as another's (each kernel
   * numbers its states from the start: a kept number would drop the new ones).
   */
  reset(): void {
    const present = this.view.present;
    this.view.dispose();
    this.view = this.makeView();
    if (present) {
      this.view.setPresent(true);
    }
  }

  private makeView(): GraphView {
    const view = new GraphView(this.body, {
      onSelect: (name, node) => {
        this.send({ selected: name });
        if (node?.cell) {
          void this.jumpToCell(node.cell);
        }
      },
      onAction: (action: StepAction, node) => this.send({ action, node }),
      onHistory: seq => this.send({ action: 'history_run', seq })
    });
    view.fillParent();
    return view;
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
    window.removeEventListener('resize', this.onWindowResize);
    window.clearTimeout(this.roomTimer);
    this.clearHighlight();
    this.view.dispose();
    super.dispose();
  }
}

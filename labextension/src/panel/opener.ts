/**
 * PanelOpener: the side panel comes to the notebooks that use flowbook.
 *
 * - When a notebook whose kernel is the Flowbook kernel (kernelspec
 *   KERNEL_NAME, installed by the package) becomes the current notebook, the
 *   side panel opens, once per notebook: closing it afterwards is the
 *   user's choice and sticks. Setting `openWithFlowbookKernel`
 *   (schema/plugin.json) turns this off.
 * - When a cell of the notebook the panel shows is run, the panel's view
 *   follows it (features/follow/: once the kernel sends the graph, the
 *   cell's ops are centred). Setting `followRunningCell` turns this off.
 *
 * State: `opened`, the notebooks the panel was opened for; `watched`, the
 * notebooks whose kernel changes are listened to; the two settings.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import { NotebookActions, type INotebookTracker, type Notebook, type NotebookPanel } from '@jupyterlab/notebook';
import type { ISettingRegistry } from '@jupyterlab/settingregistry';

import type { GraphPanel } from './panel';

/** The Flowbook kernel's kernelspec name (kernels/flowbook in the repository). */
export const KERNEL_NAME = 'flowbook';

export class PanelOpener {
  openWithKernel = true; // setting openWithFlowbookKernel
  followCells = true; // setting followRunningCell
  private started = false; // the settings are read (nothing opens before: the user may have said no)
  private readonly opened = new WeakSet<NotebookPanel>(); // the panel opened for these once
  private readonly watched = new WeakSet<NotebookPanel>(); // kernelChanged connected

  constructor(
    private readonly app: JupyterFrontEnd,
    private readonly tracker: INotebookTracker,
    private readonly panel: GraphPanel
  ) {
    tracker.currentChanged.connect((_, nb) => this.watch(nb));
    NotebookActions.executionScheduled.connect(this.onScheduled, this);
    this.watch(tracker.currentWidget);
  }

  /** Read the settings (and again whenever they change), then start. */
  useSettings(settings: ISettingRegistry.ISettings): void {
    const read = () => {
      this.openWithKernel = settings.get('openWithFlowbookKernel').composite !== false;
      this.followCells = settings.get('followRunningCell').composite !== false;
    };
    read();
    settings.changed.connect(read);
    this.start();
  }

  /** Start opening the panel (with the defaults, where there are no settings). */
  start(): void {
    this.started = true;
    this.check(this.tracker.currentWidget);
  }

  /** Open the panel for `nb` when its kernel is (or becomes) the Flowbook kernel. */
  private watch(nb: NotebookPanel | null): void {
    if (!nb) {
      return;
    }
    if (!this.watched.has(nb)) {
      this.watched.add(nb);
      nb.sessionContext.kernelChanged.connect(() => this.check(nb));
    }
    this.check(nb);
    void nb.sessionContext.ready.then(() => this.check(nb));
  }

  private check(nb: NotebookPanel | null): void {
    if (!nb || nb.isDisposed || !this.started || !this.openWithKernel || this.opened.has(nb) || nb !== this.tracker.currentWidget) {
      return;
    }
    const ctx = nb.sessionContext;
    const name = ctx.session?.kernel?.name ?? ctx.kernelPreference.name;
    if (name === KERNEL_NAME) {
      this.opened.add(nb);
      this.open();
    }
  }

  /** Show the panel in the right side bar, with room beside the notebook (room.ts). */
  open(): void {
    if (!this.panel.isAttached) {
      this.app.shell.add(this.panel, 'right', { rank: 700 });
    }
    this.app.shell.activateById(this.panel.id);
    this.panel.makeRoom(); // shown already: no show to make it
  }

  private onScheduled(_: unknown, args: { notebook: Notebook; cell: { model: { id: string } } }): void {
    if (this.followCells && this.panel.notebook && args.notebook === this.panel.notebook.content) {
      this.panel.view.followCell(args.cell.model.id);
    }
  }
}

/**
 * The side panel's connection to the kernel: a comm, target TARGET
 * (panel.ts), that the panel opens itself. It follows the notebook in front
 * (index.ts: the tracker's current notebook): each time it talks to another
 * kernel (another notebook, a restart) the panel's view starts empty, so
 * one notebook's graph never shows under another's name. Python answers with messages
 * holding any of {graph, run, tick, stepper, history, optimized} or {history_run}; the
 * panel sends {selected}, {action, node} and {action: "history_run", seq}. The comm is (re)opened when the current notebook or its
 * kernel changes, after a restart, and after a cell runs while it is not
 * open (so `%load_ext flowbook` connects without further ado).
 */

import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';

import { TARGET, type GraphPanel } from './panel';
import type { StepAction } from '../protocol/stepper';

/** Keeps one comm open to the current notebook's kernel and feeds the panel. */
export class Connection {
  private notebook: NotebookPanel | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private comm: Kernel.IComm | null = null;
  private connected = false;
  private ranSinceAttempt = false;

  constructor(private readonly panel: GraphPanel) {}

  /** Show the graph of `notebook`'s kernel (none: no notebook open). */
  follow(notebook: NotebookPanel | null): void {
    if (notebook === this.notebook) {
      return;
    }
    if (this.notebook) {
      this.notebook.sessionContext.kernelChanged.disconnect(this.onKernelChanged, this);
      this.notebook.disposed.disconnect(this.onNotebookDisposed, this);
    }
    this.notebook = notebook;
    this.panel.notebook = notebook;
    this.setKernel(null); // nothing of the notebook shown before stays on screen
    if (!notebook) {
      this.panel.setStatus('No notebook open.');
      return;
    }
    notebook.sessionContext.kernelChanged.connect(this.onKernelChanged, this);
    notebook.disposed.connect(this.onNotebookDisposed, this);
    this.panel.setStatus(`${notebook.title.label}: waiting for the kernel\u2026`);
    void notebook.sessionContext.ready.then(() => {
      if (this.notebook === notebook) {
        this.setKernel(notebook.sessionContext.session?.kernel ?? null);
      }
    });
  }

  private onNotebookDisposed(): void {
    this.follow(null);
  }

  private onKernelChanged(): void {
    this.setKernel(this.notebook?.sessionContext.session?.kernel ?? null);
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
    this.panel.reset();
    this.kernel = kernel;
    if (!kernel) {
      this.panel.setStatus('No kernel.');
      return;
    }
    kernel.statusChanged.connect(this.onStatus, this);
    kernel.iopubMessage.connect(this.onIopub, this);
    this.openComm();
  }

  private onStatus(_: Kernel.IKernelConnection, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this.closeComm();
      this.panel.reset();
      this.ranSinceAttempt = true;
      this.panel.setStatus('Kernel restarting\u2026');
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
    this.panel.reset(); // a fresh view: this kernel numbers its states from the start
    this.ranSinceAttempt = false;
    const label = this.notebook?.title.label ?? 'notebook';
    let comm: Kernel.IComm;
    try {
      comm = kernel.createComm(TARGET);
    } catch (err) {
      this.panel.setStatus(`Cannot open the flowbook comm: ${String(err)}`);
      return;
    }
    this.comm = comm;
    comm.onMsg = msg => {
      if (this.comm !== comm) {
        return;
      }
      if (!this.connected) {
        this.connected = true;
        this.panel.setStatus(`${label} \u00B7 default graph`);
        this.panel.sender = data => {
          if (!comm.isDisposed) {
            comm.send(data as never);
          }
        };
      }
      const data = (msg.content.data ?? {}) as Record<string, unknown>;
      if ('graph' in data) {
        this.panel.view.setGraph(data.graph);
      }
      if ('run' in data) {
        this.panel.view.setRun(data.run);
      }
      if ('tick' in data) {
        this.panel.view.feed.setTick(data.tick);
      }
      if ('stepper' in data) {
        this.panel.view.setStepper(data.stepper);
      }
      if ('history' in data) {
        this.panel.view.feed.setHistory(data.history);
      }
      if ('optimized' in data) {
        this.panel.view.setOptimized(data.optimized);
      }
      if ('history_run' in data || 'message' in data) {
        this.panel.view.feed.receive(data);
      }
    };
    comm.onClose = () => {
      if (this.comm === comm) {
        this.comm = null;
        this.notLoaded();
      }
    };
    this.panel.setStatus(`${label}: connecting\u2026`);
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
    this.panel.sender = null;
    this.panel.setStatus('No flowbook graph here: run ', '%load_ext flowbook', ' or pick the Flowbook kernel.');
  }

  private closeComm(): void {
    const comm = this.comm;
    this.comm = null;
    this.connected = false;
    this.panel.sender = null;
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
    this.panel.sender?.({ action, node: null });
  }
}

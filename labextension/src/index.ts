/**
 * Flowbook's JupyterLab extension: the side panel (panel.ts) that always
 * shows the graph of the current notebook's kernel, kept connected by a
 * Connection (connection.ts), and commands for it.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';

import { Connection } from './connection';
import { GraphPanel, flowbookIcon } from './panel';
import type { StepAction } from './view/types';

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

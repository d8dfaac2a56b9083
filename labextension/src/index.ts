/**
 * Flowbook's JupyterLab extension: the side panel (panel/panel.ts) that
 * always shows the graph of the current notebook's kernel, kept connected
 * by a Connection (panel/connection.ts), opened with the Flowbook kernel and
 * following the cell being run (panel/opener.ts; settings in
 * schema/plugin.json), and commands for it. It also holds the view that
 * every GraphWidget in the page renders with (graph-widget.ts,
 * widget-loader.ts), so notebooks do not store a copy per widget.
 */

import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { provideRender } from './graph-widget';
import { Connection } from './panel/connection';
import { GraphPanel, flowbookIcon } from './panel/panel';
import { PanelOpener } from './panel/opener';
import type { StepAction } from './protocol/stepper';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'flowbook:plugin',
  description: 'Flowbook graph side panel and commands',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ICommandPalette, ISettingRegistry],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    palette: ICommandPalette | null,
    settings: ISettingRegistry | null
  ) => {
    provideRender(); // the view that GraphWidgets' loader renders with (widget-loader.ts)
    const panel = new GraphPanel(tracker, app.shell);
    const connection = new Connection(panel);
    app.shell.add(panel, 'right', { rank: 700 });
    tracker.currentChanged.connect((_, nb) => connection.follow(nb));
    connection.follow(tracker.currentWidget);
    const opener = new PanelOpener(app, tracker, panel); // opens with the Flowbook kernel
    if (settings) {
      settings.load(plugin.id).then(
        s => opener.useSettings(s),
        err => {
          console.warn('flowbook: settings not loaded, using the defaults', err);
          opener.start();
        }
      );
    } else {
      opener.start();
    }

    const open = 'flowbook:open-graph-panel';
    app.commands.addCommand(open, {
      label: 'Show Flowbook Graph Panel',
      caption: 'Show the graph of the current notebook’s kernel in the right side bar',
      icon: flowbookIcon,
      execute: () => opener.open()
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

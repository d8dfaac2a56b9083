// Bundle src/graph-widget.ts (anywidget's ES module) into one self-contained
// file, flowbook/static/graph-widget.js, with its CSS beside it. Graphviz's
// WebAssembly comes inlined from @viz-js/viz, so nothing is fetched at run time.
// Widgets send src/widget-loader.ts (graph-widget-loader.js), which renders with
// the copy of the view the JupyterLab extension holds; the whole bundle is sent
// only where FLOWBOOK_EMBED_WIDGET is set, and serves the stand-in test page.
import * as esbuild from 'esbuild';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const here = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.resolve(here, '../../flowbook/static');
const watch = process.argv.includes('--watch');

const options = {
  entryPoints: {
    'graph-widget': path.resolve(here, '../src/graph-widget.ts'),
    'graph-widget-loader': path.resolve(here, '../src/widget-loader.ts')
  },
  outdir,
  bundle: true,
  format: 'esm',
  target: ['es2020'],
  minify: !watch,
  sourcemap: false,
  legalComments: 'eof',
  logLevel: 'info'
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}

// Remove build outputs: lib/, the built labextension and the widget bundle.
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
for (const p of [
  'lib',
  'tsconfig.tsbuildinfo',
  '../flowbook/labextension',
  '../flowbook/static/graph-widget.js',
  '../flowbook/static/graph-widget.css'
]) {
  rmSync(path.resolve(root, p), { recursive: true, force: true });
}

#!/usr/bin/env node
// Builds the web console's browser app (console-ui/) into dist/console-ui/ with Vite: one bundle with
// Preact and Chart.js inside, no CDN and no network. `npm install` runs it as part of `prepare`.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import preact from '@preact/preset-vite';
import { build } from 'vite';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const started = Date.now();
await build({
  root: join(ROOT, 'console-ui'),
  // Relative asset paths: the server may mount the app under any prefix.
  base: './',
  configFile: false,
  logLevel: 'warn',
  plugins: [preact()],
  build: { outDir: join(ROOT, 'dist', 'console-ui'), emptyOutDir: true, sourcemap: true },
});
console.log(`console-ui built in ${Date.now() - started} ms`);

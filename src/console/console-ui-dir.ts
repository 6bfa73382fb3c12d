// Where the browser app's build lives (`npm run build:ui` writes it with Vite): dist/console-ui/ of this
// package, found by walking up to its package.json so sources, the tsc build and the CLI bundle agree.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'durable-harness') return dir;
      } catch {
        // Not ours (or unreadable): keep walking up.
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
}

export const CONSOLE_UI_DIR = join(packageRoot(), 'dist', 'console-ui');

// The browser app's files from one directory, and nothing outside it: the resolved path must stay under
// the directory (no `..`, no absolute paths, no symlink out). Unknown paths get index.html (client routes).
import { realpathSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

export const MISSING_UI_PAGE =
  '<!doctype html><meta charset="utf-8"><title>dh ui</title>' +
  '<p>The web console app is not built. Build it with <code>npm run build:ui</code> and reload; ' +
  'the API is up at <a href="/api/openapi.json">/api/openapi.json</a>.</p>';

export async function staticFile(root: string, urlPath: string): Promise<Response> {
  let base: string;
  try {
    base = realpathSync(root);
  } catch {
    return urlPath === '/' || urlPath === '/index.html'
      ? new Response(MISSING_UI_PAGE, { status: 200, headers: { 'content-type': 'text/html; charset=utf-8' } })
      : new Response('not found', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } });
  }
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return new Response('bad path', { status: 400 });
  }
  const file = inside(base, decoded === '/' ? '/index.html' : decoded) ?? inside(base, '/index.html');
  if (file === null) return new Response('not found', { status: 404 });
  const type = TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';
  return new Response(await readFile(file), { status: 200, headers: { 'content-type': type } });
}

/** The real path of a regular file under `base`, or null. */
function inside(base: string, path: string): string | null {
  if (path.includes('\0')) return null;
  const candidate = resolve(join(base, path));
  if (candidate !== base && !candidate.startsWith(base + sep)) return null;
  try {
    const real = realpathSync(candidate);
    if (!real.startsWith(base + sep) || !statSync(real).isFile()) return null;
    return real;
  } catch {
    return null;
  }
}

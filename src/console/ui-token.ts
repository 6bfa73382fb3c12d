// The bearer token the console requires when it is bound off loopback: DH_UI_TOKEN, else one generated
// on first start into $DH_HOME/ui-token (mode 0600). `created` tells the caller to print it, once.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const UI_TOKEN_FILE = 'ui-token';

export interface UiToken {
  readonly token: string;
  /** Generated now (print it); false when it came from DH_UI_TOKEN or an existing file. */
  readonly created: boolean;
  /** The file it lives in; null when it came from the environment. */
  readonly file: string | null;
}

export function loadOrCreateUiToken(home: string, env: NodeJS.ProcessEnv = process.env): UiToken {
  const fromEnv = env.DH_UI_TOKEN?.trim();
  if (fromEnv !== undefined && fromEnv !== '') return { token: fromEnv, created: false, file: null };
  const file = join(home, UI_TOKEN_FILE);
  try {
    const existing = readFileSync(file, 'utf8').trim();
    if (existing !== '') return { token: existing, created: false, file };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(home, { recursive: true });
  const token = randomBytes(32).toString('base64url');
  // `wx`: two starts racing never overwrite each other's token; mode is set at creation, then enforced.
  writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return { token, created: true, file };
}

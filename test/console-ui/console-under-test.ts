// The console server the browser tests drive: src/console's server on a free loopback port, serving the
// built app from dist/console-ui/ and the API over the harness's Temporal client and store.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Harness } from '../helpers/session-harness.js';

export interface ConsoleUnderTest {
  readonly url: string;
  stop(): Promise<void>;
}

/** Where `npm run build:ui` (run by `npm install`) puts the app. */
export const CONSOLE_UI_DIST = join(import.meta.dirname, '..', '..', 'dist', 'console-ui');

/** The server module's entry; imported by name at run time so this file compiles before it lands. */
const SERVER_MODULE = '../../src/console/console-server.js';

interface ServerModule {
  startConsoleServer(options: {
    readonly client: Harness['client'];
    readonly store: Harness['store'];
    readonly host: string;
    readonly port: number;
    readonly uiDir: string;
  }): Promise<{ readonly url: string; stop(): Promise<void> }>;
}

export async function startConsoleUnderTest(h: Harness): Promise<ConsoleUnderTest> {
  if (!existsSync(join(CONSOLE_UI_DIST, 'index.html'))) {
    throw new Error(`the console app is not built in ${CONSOLE_UI_DIST}: run \`npm run build:ui\` (npm install does)`);
  }
  const server = (await import(SERVER_MODULE)) as ServerModule;
  return server.startConsoleServer({
    client: h.client,
    store: h.store,
    host: '127.0.0.1',
    port: 0,
    uiDir: CONSOLE_UI_DIST,
  });
}

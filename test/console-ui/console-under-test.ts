// The console server the browser tests drive: src/console's server on a free loopback port, serving the
// built app from dist/console-ui/ and the API over the harness's Temporal client, store and delta channel; or,
// given a token, bound to every interface (as `dh ui --host 0.0.0.0`), where every /api route requires it.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { SessionClient } from '../../src/client/session-client.js';
import { CONSOLE_UI_DIR } from '../../src/console/console-ui-dir.js';
import { startConsoleServer } from '../../src/console/console-server.js';
import { openDeltaChannel } from '../../src/streaming/open-delta-channel.js';
import type { Harness } from '../helpers/session-harness.js';

export interface ConsoleUnderTest {
  readonly url: string;
  stop(): Promise<void>;
}

export async function startConsoleUnderTest(h: Harness, options: { token?: string } = {}): Promise<ConsoleUnderTest> {
  if (!existsSync(join(CONSOLE_UI_DIR, 'index.html'))) {
    throw new Error(`the console app is not built in ${CONSOLE_UI_DIR}: run \`npm run build:ui\` (npm install does)`);
  }
  const channel = openDeltaChannel(h.storePath);
  const server = await startConsoleServer({
    store: h.store,
    channel,
    sessions: new SessionClient(h.client, { taskQueue: h.taskQueue }),
    derive: { profile: h.profile },
    uiDir: CONSOLE_UI_DIR,
    host: options.token !== undefined ? '0.0.0.0' : '127.0.0.1',
    port: 0,
    ...(options.token !== undefined ? { token: options.token } : {}),
    live: { pollMs: 100, statusEveryMs: 500 },
  });
  return {
    // Reached over loopback either way (a loopback name is always a Host the server accepts).
    url: `http://127.0.0.1:${server.port}/`,
    stop: async () => {
      await server.close();
      await channel.close();
    },
  };
}

// The stack a pty test of `dh chat` runs against: the live-CLI tests' stack (scripted provider, the run's
// Temporal server, a `dh worker` child on a unique task queue, a temp DH_HOME) plus the store and a
// SessionClient on it, so a test can type into `dh` in a pty and check the log it wrote.
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { inject } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import type {
  ScriptedProvider,
  StartScriptedProviderOptions,
} from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { startLiveStack, type DhProcess } from '../cli/live-harness.js';
import { DH_BIN } from '../cli/operator-cli.js';

export { TEST_MODEL } from '../cli/live-harness.js';

export interface StartChatStackOptions {
  /** The provider's script; its `models` should include TEST_MODEL, the model the stack's `dh` asks for. */
  readonly script: StartScriptedProviderOptions['script'];
  /** More environment for both the worker and the `dh` a test spawns (e.g. `DH_APPROVAL_ASK`). */
  readonly env?: NodeJS.ProcessEnv;
}

export interface ChatStack {
  /** The environment for `dh`: this stack's home, Temporal server, task queue and provider. */
  readonly env: NodeJS.ProcessEnv;
  /** `[node, bin/dh.mjs]`: spread into startPty with the subcommand after it. */
  readonly dhCommand: readonly [string, string];
  /** DH_HOME (its sessions.db is `store`). */
  readonly home: string;
  /** The store the worker writes, opened by the test (SQLite in WAL: reads alongside the worker are fine). */
  readonly store: SqliteSessionStore;
  /** A client on the worker's task queue, for what a test does to a session besides typing. */
  readonly sessions: SessionClient;
  readonly provider: ScriptedProvider;
  readonly worker: DhProcess;
  close(): Promise<void>;
}

export async function startChatStack(options: StartChatStackOptions): Promise<ChatStack> {
  const live = await startLiveStack(options.script, options.env ?? {});
  const { env, home } = live.stack;
  let connection: Connection | undefined;
  let store: SqliteSessionStore | undefined;
  try {
    store = SqliteSessionStore.open(join(home, 'sessions.db'));
    connection = await Connection.connect({ address: inject('temporalAddress') });
    const client = new Client({ connection, namespace: inject('temporalNamespace') });
    const sessions = new SessionClient(client, { taskQueue: env.DH_TASK_QUEUE as string });
    const opened = { connection, store };
    return {
      env,
      dhCommand: [process.execPath, DH_BIN],
      home,
      store,
      sessions,
      provider: live.provider,
      worker: live.worker,
      close: async () => {
        await opened.connection.close();
        await opened.store.close();
        await live.stop();
      },
    };
  } catch (error) {
    await connection?.close();
    await store?.close();
    await live.stop();
    throw error;
  }
}

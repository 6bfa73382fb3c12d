// A plugin's model switch on a generic endpoint, through the real worker (startWorker from DH_* variables) on
// the scripted provider: the worker learns the served models from GET /v1/models; a switch to one of them
// reaches the provider with that model's own window and output limit; a model it does not serve is refused
// naming the served ones, and that failed first turn does not start a new loop instance.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import { readWorkerConfig } from '../../src/config/worker-config.js';
import type { EventOf, SessionEvent } from '../../src/core/index.js';
import { createLogger } from '../../src/observability/logger.js';
import type { Plugin } from '../../src/plugins/plugin.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { startWorker } from '../../src/worker/start-worker.js';
import { waitForTurnEnd } from '../helpers/session-harness.js';

const SMALL = 'support-small';
const LARGE = 'support-large';
const UNSERVED = 'support-premium';
const RUN = `switch-${process.pid}-${Date.now().toString(36)}`;

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) =>
  events.filter((e): e is EventOf<T> => e.type === type);

/** The text of the step's newest user message (what the plugin decides the model by). */
function lastUserText(events: readonly SessionEvent[]): string {
  const last = ofType(events, 'user/message').at(-1);
  return typeof last?.content === 'string' ? last.content : '';
}

describe("a plugin's model switch on a generic endpoint", () => {
  let dir: string;
  let provider: ScriptedProvider;
  let connection: Connection;
  let stopWorker: () => Promise<void>;
  let store: SqliteSessionStore;
  let sessions: SessionClient;
  const lines: string[] = [];
  /** How often the plugin composed the session prefix: once per loop instance. */
  let prefixes = 0;

  const switcher: Plugin = {
    name: 'model-switch',
    sessionPrefix: () => {
      prefixes++;
      return { system: 'Answer support questions.' };
    },
    request: (config, context) => {
      const text = lastUserText(context.events);
      if (text.includes('escalate')) return { ...config, model: LARGE };
      if (text.includes('premium')) return { ...config, model: UNSERVED };
      return config;
    },
  };

  const chatBodies = () =>
    provider
      .requests()
      .filter((r) => r.path.endsWith('/chat/completions'))
      .map((r) => JSON.parse(r.body) as { model: string; max_tokens?: number });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-model-switch-'));
    provider = await startScriptedProvider({
      script: {
        models: [SMALL, LARGE],
        contextWindows: { [SMALL]: 16_384, [LARGE]: 8_192 },
        mode: 'match',
        replies: [{ match: { lastUserContains: 'escalate' }, text: 'the large model answers' }],
        default: { text: 'the small model answers' },
      },
    });
    connection = await Connection.connect({ address: inject('temporalAddress') });
    const config = readWorkerConfig({
      DH_HOME: dir,
      DH_STORE: join(dir, 'sessions.db'),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      DH_TASK_QUEUE: `${RUN}-queue`,
      DH_PROVIDER: 'scripted',
      DH_BASE_URL: provider.url,
      DH_MODEL: SMALL,
      DH_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    });
    const log = createLogger({ level: 'info', write: (line) => lines.push(line) });
    const worker = await startWorker({ config, plugins: [switcher], log });
    const running = worker.run();
    stopWorker = async () => {
      await worker.shutdown();
      await running;
      await worker.close();
    };
    store = SqliteSessionStore.open(config.store);
    sessions = new SessionClient(new Client({ connection, namespace: config.namespace }), {
      taskQueue: config.taskQueue,
    });
  });
  afterAll(async () => {
    await stopWorker?.();
    await store?.close();
    await connection?.close();
    await provider?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('learns the served models at start, with the windows the endpoint reports', () => {
    expect(lines.join('\n')).toContain(
      `models served (GET ${provider.url}/models): ${SMALL} (16384 tokens), ${LARGE} (8192 tokens)`,
    );
  });

  it('refuses an unserved model naming the served ones; the next turns switch, and stay one loop instance', async () => {
    const id = `${RUN}-session`;
    await sessions.followup(id, 'I want the premium model', { start: true });
    let events = await waitForTurnEnd(store, id, 1);
    const [refused] = ofType(events, 'turn/end');
    expect(refused).toMatchObject({ turn: 1, reason: 'error', error: { code: 'UNSUPPORTED_REQUEST' } });
    expect(refused?.error?.message).toContain(
      `model "${UNSERVED}" is not in profile "scripted" (known: ${SMALL}, ${LARGE})`,
    );
    expect(ofType(events, 'request/sent')).toEqual([]);
    expect(chatBodies().map((b) => b.model)).not.toContain(UNSERVED);

    await sessions.followup(id, 'please escalate this');
    events = await waitForTurnEnd(store, id, 2);
    await sessions.followup(id, 'thanks, that is all');
    events = await waitForTurnEnd(store, id, 3);
    expect(ofType(events, 'turn/end').map((e) => e.reason)).toEqual(['error', 'completed', 'completed']);
    expect(ofType(events, 'assistant/message').map((e) => e.content)).toEqual([
      'the large model answers',
      'the small model answers',
    ]);
    // Each header records its own model's window and the output limit a quarter of it gives (at most 4096).
    expect(
      ofType(events, 'request/header').map((e) => [
        e.turn,
        e.reason,
        e.header.config.model,
        e.header.contextWindow,
        e.header.config.maxTokens,
      ]),
    ).toEqual([
      [1, 'initial', UNSERVED, undefined, undefined],
      [2, 'change', LARGE, 8_192, 2_048],
      [3, 'change', SMALL, 16_384, 4_096],
    ]);
    // The request reaches the provider with the switched model and its limit.
    expect(chatBodies().map((b) => [b.model, b.max_tokens])).toEqual([
      [LARGE, 2_048],
      [SMALL, 4_096],
    ]);
    // The failed first turn logged the instance's header: the prefix was composed once, and never re-run.
    expect(prefixes).toBe(1);
    expect(new Set(ofType(events, 'request/header').map((e) => e.header.system))).toEqual(
      new Set(['Answer support questions.']),
    );
  });
});

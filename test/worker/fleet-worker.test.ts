// The fleet controls through the real worker (startWorker, configured from DH_* variables as `dh worker` is):
// DH_RATE_LIMIT_RPM paces four sessions that start at once to the quota's spacing (the provider enforces the
// same quota and never answers 429), the limiter's file sits beside the store, DH_PRICING prices every answer
// in the log, and the worker takes its many model slots.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import { FLEET_MODEL_CONCURRENCY, readWorkerConfig } from '../../src/config/worker-config.js';
import { createLogger } from '../../src/observability/logger.js';
import { systemPromptPlugin } from '../../src/plugins/basic-plugins.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { limiterPathFor } from '../../src/limiter/sqlite-limiter-store.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { startWorker } from '../../src/worker/start-worker.js';
import { waitForTurnEnd } from '../helpers/session-harness.js';

const MODEL = 'fleet-model';
const RPM = 120; // one call every 500 ms
const RUN = `fleet-worker-${process.pid}-${Date.now().toString(36)}`;
const PRICE = { inputPerMillion: 2, cachedInputPerMillion: 0.5, outputPerMillion: 8 };

describe('the fleet controls through the real worker', () => {
  let dir: string;
  let provider: ScriptedProvider;
  let connection: Connection;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-fleet-worker-'));
    provider = await startScriptedProvider({
      script: { models: [MODEL], replies: [], default: { text: 'paced.' } },
      quota: { requestsPerMinute: RPM },
    });
    connection = await Connection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await connection?.close();
    await provider?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('paces sessions that start together to DH_RATE_LIMIT_RPM, and logs each answer priced by DH_PRICING', async () => {
    const home = join(dir, 'home');
    const config = readWorkerConfig({
      DH_HOME: home,
      DH_STORE: join(home, 'sessions.db'),
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      DH_TASK_QUEUE: RUN,
      DH_PROVIDER: 'fleetllm',
      DH_BASE_URL: provider.url,
      DH_MODEL: MODEL,
      DH_CONTEXT_WINDOW: '8192',
      DH_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      DH_RATE_LIMIT_RPM: String(RPM),
      DH_PRICING: JSON.stringify({ [`fleetllm/${MODEL}`]: PRICE }),
      DH_SESSION_COST_CAP_USD: '1',
    });
    expect(config.modelConcurrency).toBe(FLEET_MODEL_CONCURRENCY);
    const lines: string[] = [];
    const worker = await startWorker({
      config,
      plugins: [systemPromptPlugin('You are a test agent.')],
      log: createLogger({ level: 'info', write: (line) => lines.push(line) }),
    });
    // The operator is told the limiter is on, for which account (a digest, never the key), at what quota.
    expect(lines.join('\n')).toMatch(/fleet limiter on for account fleetllm:[0-9a-f]{16}: 120 requests\/min/);
    const running = worker.run();
    const store = SqliteSessionStore.open(config.store);
    try {
      const sessions = new SessionClient(new Client({ connection, namespace: config.namespace }), {
        taskQueue: config.taskQueue,
      });
      const ids = [1, 2, 3, 4].map((n) => `${RUN}-${n}`);
      await Promise.all(ids.map((id) => sessions.followup(id, 'hello', { start: true })));
      const logs = await Promise.all(ids.map((id) => waitForTurnEnd(store, id, 1, 60_000)));

      for (const events of logs) {
        expect(events.filter((e) => e.type === 'turn/end').map((e) => e.type === 'turn/end' && e.reason)).toEqual([
          'completed',
        ]);
        const answer = events.find((e) => e.type === 'assistant/message');
        expect(answer?.type === 'assistant/message' && answer.cost?.price).toEqual(PRICE);
      }
      // Four calls at once, one quota: the limiter spaced them (load can only widen the gaps), so the
      // provider, which enforces the same quota, refused none.
      const times = provider
        .requests()
        .filter((r) => r.path.endsWith('/chat/completions'))
        .map((r) => r.receivedAt)
        .sort((a, b) => a - b);
      expect(times).toHaveLength(4);
      for (let i = 1; i < times.length; i++) expect((times[i] ?? 0) - (times[i - 1] ?? 0)).toBeGreaterThan(400);
      expect(provider.rateLimitedAt()).toEqual([]);
      expect(existsSync(limiterPathFor(config.store))).toBe(true);
    } finally {
      await worker.shutdown();
      await running;
      await worker.close();
      await store.close();
    }
  });
});

// Which activities each of a session worker's four workers registers: each queue's own set
// (src/shared/activity-queues.ts, and the eval step on the model queues), and on the session queue also the two
// that older runs still schedule there.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { defaultHeaderComposer } from '../../src/worker/default-header.js';
import { createSessionWorker } from '../../src/worker/create-session-worker.js';
import { scriptedProfile, TEST_MODEL } from '../helpers/session-harness.js';

const dir = mkdtempSync(join(tmpdir(), 'dh-queue-activities-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('session worker registrations', () => {
  it('registers on each task queue only the activities scheduled there', async () => {
    const store = SqliteSessionStore.open(join(dir, 'sessions.db'));
    // Never called: no session runs here.
    const profile = scriptedProfile('http://127.0.0.1:9');
    const taskQueue = `queue-activities-${process.pid}-${Date.now()}`;
    const worker = await createSessionWorker({
      address: inject('temporalAddress'),
      namespace: inject('temporalNamespace'),
      taskQueue,
      workflowBundlePath: inject('workflowBundlePath'),
      hostId: 'h1',
      runtime: {
        store,
        profile,
        apiKey: 'sk-test-not-a-real-key',
        tools: new Map(),
        composeHeader: defaultHeaderComposer({
          config: { provider: profile.name, model: TEST_MODEL },
          tools: new Map(),
        }),
        idleTimeoutMs: 5_000,
        heartbeatMs: 1_000,
      },
    });
    try {
      const registered = Object.fromEntries(
        worker.workers.map((w) => [w.options.taskQueue, [...w.options.activities.keys()].sort()]),
      );
      expect(registered).toEqual({
        [taskQueue]: [
          'appendInbox',
          'closeStep',
          'closeTurn',
          'configureSession',
          'modelStep',
          'openSession',
          'toolStep',
        ],
        // A `dh eval` run's steps are model calls too: they take the model queue's slots.
        [`${taskQueue}-model`]: ['compact', 'evalStep', 'modelStep'],
        [`${taskQueue}-model-host-h1`]: ['compact', 'evalStep', 'modelStep'],
        [`${taskQueue}-host-h1`]: ['toolStep'],
      });
    } finally {
      // The workers never ran: release them (and the connection) without polling.
      await Promise.all(worker.workers.map((w) => w.runUntil(Promise.resolve())));
      await worker.connection.close();
      await store.close();
    }
  });
});

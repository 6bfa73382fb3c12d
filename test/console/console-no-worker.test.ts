// The web console when no worker polls a session's task queue (a console started with another DH_TASK_QUEUE
// than the workers'): a fork it makes lands on that queue and the answer warns; the session's detail says so
// instead of timing out on the state query; a message is accepted with the warning; an approval or compaction
// (updates, which need a worker to take them) is refused at once with 409 NO_WORKER_POLLING.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionClient } from '../../src/client/session-client.js';
import type { Accepted, ApiError, ForkResponse, SessionDetail } from '../../src/console/console-api.js';
import { startConsoleServer, type ConsoleServer } from '../../src/console/console-server.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { MemoryDeltaChannel } from '../../src/streaming/memory-delta-channel.js';
import { startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { call, post } from './console-client.js';

describe('web console with no worker on the queue', () => {
  let h: Harness;
  let server: ConsoleServer;
  const unpolled = `console-unpolled-${process.pid}-${Date.now()}`;

  beforeAll(async () => {
    h = await startHarness({ script: { mode: 'match', replies: [{ text: 'done', repeat: 5 }] } });
    const handle = await h.start('console-nw-source');
    await handle.signal(followupSignal, { content: 'a turn to fork from' });
    await waitForTurnEnd(h.store, 'console-nw-source', 1);
    server = await startConsoleServer({
      store: h.store,
      channel: new MemoryDeltaChannel(),
      sessions: new SessionClient(h.client, { taskQueue: unpolled, timeoutMs: 10_000 }),
      uiDir: '/nonexistent-console-ui',
      host: '127.0.0.1',
      port: 0,
      token: null,
    });
  }, 90_000);

  afterAll(async () => {
    await server?.close();
    await h?.stop();
  });

  it('warns on the fork, the detail and a message, and refuses updates with 409', async () => {
    const head = await h.store.head('console-nw-source');
    const fork = await post(server.url, '/api/sessions/console-nw-source/fork', { atSeq: head, as: 'console-nw-fork' });
    expect(fork.status, fork.text).toBe(201);
    const forked = fork.body as ForkResponse;
    expect(forked.sessionId).toBe('console-nw-fork');
    expect(forked.warning?.code).toBe('NO_WORKER_POLLING');
    expect(forked.warning?.message).toContain(`no worker is polling task queue "${unpolled}"`);
    expect(forked.warning?.message).toContain('DH_TASK_QUEUE');

    const detail = (await call(server.url, '/api/sessions/console-nw-fork')).body as SessionDetail;
    expect(detail.worker).toEqual({ taskQueue: unpolled, pollers: 0 });
    expect(detail.workerWarning?.code).toBe('NO_WORKER_POLLING');
    expect(detail.state).toBeNull();
    expect(detail.stateUnavailable).toContain('no worker is polling');

    const message = await post(server.url, '/api/sessions/console-nw-fork/messages', { kind: 'steer', content: 'hi' });
    expect(message.status, message.text).toBe(202);
    expect((message.body as Accepted).warning?.code).toBe('NO_WORKER_POLLING');

    for (const path of ['/api/sessions/console-nw-fork/compact', '/api/sessions/console-nw-fork/approvals/c1']) {
      const body = path.endsWith('compact') ? {} : { decision: 'approve' };
      const refused = await post(server.url, path, body);
      expect(refused.status, `${path}: ${refused.text}`).toBe(409);
      expect((refused.body as ApiError).error.code).toBe('NO_WORKER_POLLING');
    }

    // The source runs on the harness's queue, which a worker polls: no warning there.
    const source = (await call(server.url, '/api/sessions/console-nw-source')).body as SessionDetail;
    expect(source.worker?.taskQueue).toBe(h.taskQueue);
    expect(source.worker?.pollers).toBeGreaterThan(0);
    expect(source.workerWarning).toBeNull();
    expect(source.state).toMatchObject({ status: 'idle' });
  }, 60_000);
});

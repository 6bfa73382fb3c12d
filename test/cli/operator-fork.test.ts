// `dh fork` and `dh resume` against the run's Temporal server with a `dh worker` child process on the
// scripted provider: the fork's next message runs on it, and a closed session resumes as a new run.
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SessionEvent } from '../../src/core/index.js';
import { SessionClient } from '../../src/client/session-client.js';
import { sessionWorkflowId } from '../../src/shared/session-messages.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { standardLog } from '../audit/audited-log.js';
import { cleanEnv, describeRun, runDh, startDhWorker, tempHome, type DhWorker } from './operator-cli.js';

const MODEL = 'fork-model';

describe('dh fork and dh resume on a real worker', () => {
  const home = tempHome('dh-cli-fork-');
  const taskQueue = `dh-cli-fork-${process.pid}-${Date.now()}`;
  let provider: ScriptedProvider;
  let worker: DhWorker | undefined;
  let store: SqliteSessionStore;
  let connection: Connection;
  let sessions: SessionClient;
  let env: NodeJS.ProcessEnv;
  let parent: SessionEvent[];

  beforeAll(async () => {
    provider = await startScriptedProvider({
      script: {
        models: [MODEL],
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'fork' }, text: 'Running on the fork.' },
          { match: { lastUserContains: 'resumed' }, text: 'Running again after the resume.' },
        ],
      },
    });
    env = cleanEnv({
      DH_HOME: home.home,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      DH_TASK_QUEUE: taskQueue,
      DH_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
      DH_PROVIDER: 'scripted',
      DH_BASE_URL: provider.url,
      DH_MODEL: MODEL,
      DH_API_KEY_ENV: 'DH_FORK_TEST_KEY',
      DH_FORK_TEST_KEY: 'sk-test-not-a-real-key',
      DH_SHELL_SANDBOX: 'none',
      DH_LOG_LEVEL: 'warn',
    });
    store = SqliteSessionStore.open(join(home.home, 'sessions.db'));
    parent = await standardLog('parent');
    await store.create('parent', { createdAt: 1 });
    await store.append('parent', 0, parent);
    worker = await startDhWorker(env, join(home.home, 'worker.ready'));
    connection = await Connection.connect({ address: inject('temporalAddress') });
    sessions = new SessionClient(new Client({ connection, namespace: inject('temporalNamespace') }), { taskQueue });
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await connection?.close();
    await store?.close();
    await provider?.close();
    home.cleanup();
  });

  async function waitForTurnEnd(sessionId: string, turn: number): Promise<SessionEvent[]> {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const events = await store.read(sessionId).catch(() => []);
      if (events.some((e) => e.type === 'turn/end' && e.turn === turn)) return events;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`turn ${turn} of ${sessionId} never ended\n${worker?.output() ?? ''}`);
  }

  it('forks after turn 1, and a message on the fork runs on the worker', async () => {
    const turnEnd = parent.find((e) => e.type === 'turn/end' && e.turn === 1);
    const at = (turnEnd?.seq ?? 0) + 1;
    const inside = await runDh(['fork', 'parent', '--at', String(at - 3), '--as', 'bad-fork'], env);
    expect(inside.code).toBe(1);
    expect(inside.stderr).toContain('turn 1 is open at that point');

    const forked = await runDh(['fork', 'parent', '--at', String(at), '--as', 'child'], env);
    expect(forked.code, describeRun(forked)).toBe(0);
    expect(forked.stdout).toBe('child\n');
    const seeded = await store.read('child');
    expect(seeded.slice(1, at)).toEqual(parent.slice(1, at));
    expect(seeded[0]).toMatchObject({
      type: 'session/start',
      sessionId: 'child',
      parent: { sessionId: 'parent', seedLength: at },
    });
    expect(seeded[at]).toMatchObject({ type: 'session/seed-end', seq: at });
    // The fork's chain starts from the parent's chain digest where the seed ends.
    const forkPoint = (await store.readChain('parent', at - 1, at)).links[0]?.chain;
    expect(forkPoint).toMatch(/^sha256:/);
    expect((await store.readChain('child')).anchor).toBe(forkPoint);

    await sessions.followup('child', 'Continue on the fork.');
    const events = await waitForTurnEnd('child', 2);
    expect(events.find((e) => e.type === 'turn/end' && e.turn === 2)).toMatchObject({ reason: 'completed' });
    expect(
      events.filter((e) => e.type === 'request/header').map((e) => e.type === 'request/header' && e.reason),
    ).toEqual(['initial', 'resume']);
    expect(events.find((e) => e.type === 'assistant/message' && e.turn === 2)).toMatchObject({
      content: 'Running on the fork.',
    });

    // The fork audits clean: the seed's requests derive on the deepseek profile, the new one on the
    // scripted endpoint's; the history mirrors everything after the client-written seed.
    const audit = await runDh(['audit', 'child'], env);
    expect(audit.code, describeRun(audit)).toBe(0);
    expect(audit.stdout).toContain(`history mirror: ok (1 run(s), `);
    expect(audit.stdout).toContain(`seqs 0..${at} predate the workflow`);
    expect(audit.stdout).toMatch(/^chain: \d+ link\(s\) recompute, fork anchor matches the parent, /m);
    // The parent is untouched.
    expect(await store.read('parent')).toEqual(parent);
  }, 90_000);

  it('resume refuses a running session, and starts a new run of a closed one', async () => {
    const running = await runDh(['resume', 'child'], env);
    expect(running.code).toBe(1);
    expect(running.stderr).toContain('is running');

    await sessions.close('child');
    const handle = sessions.client.workflow.getHandle(sessionWorkflowId('child'));
    await handle.result();

    const resumed = await runDh(['resume', 'child'], env);
    expect(resumed.code, describeRun(resumed)).toBe(0);
    expect(resumed.stdout).toBe('child\n');
    expect(resumed.stderr).toContain('previous run');
    await sessions.followup('child', 'Are you resumed?');
    const events = await waitForTurnEnd('child', 3);
    expect(
      events.filter((e) => e.type === 'request/header').map((e) => e.type === 'request/header' && e.reason),
    ).toEqual(['initial', 'resume', 'resume']);
    const audit = await runDh(['audit', 'child'], env);
    expect(audit.code, describeRun(audit)).toBe(0);
    expect(audit.stdout).toContain('history mirror: ok (2 run(s), ');
  }, 90_000);
});

// The tool policy under worker kills (child worker processes on a real Temporal server, the policy read
// from a file as `dh worker` reads DH_POLICY): a worker killed between a call's verdict and its run leaves
// one verdict, and the next worker acts on it even after the file changed; a worker killed while a call
// waits for approval leaves the ask standing, and an approval by short id on the next one runs it once.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { approvalShortId, type EventOf, type SessionEvent } from '../../src/core/index.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { approveUpdate, followupSignal, sessionWorkflowId } from '../../src/shared/session-messages.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { agentSession } from '../../src/workflows/session-workflow.js';
import { startChildWorker, type ChildWorker, type WorkerProcessConfig } from '../helpers/child-worker.js';
import { TEST_MODEL, waitForState, waitForTurnEnd } from '../helpers/session-harness.js';

const verdicts = (events: readonly SessionEvent[], callId: string) =>
  events.filter((e): e is EventOf<'policy/verdict'> => e.type === 'policy/verdict' && e.callId === callId);
const result = (events: readonly SessionEvent[], callId: string) =>
  events.find((e): e is EventOf<'tool/result'> => e.type === 'tool/result' && e.callId === callId);

describe('the tool policy across worker kills', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-policy-crash-'));
  const policyFile = join(dir, 'policy.json');
  const runLog = join(dir, 'tool-runs.log');
  const children: ChildWorker[] = [];
  let provider: ScriptedProvider;
  let store: SqliteSessionStore;
  let connection: Connection;
  let config: WorkerProcessConfig;
  const writePolicy = (version: string, rules: unknown[]) =>
    writeFileSync(policyFile, JSON.stringify({ version, rules }));

  beforeAll(async () => {
    provider = await startScriptedProvider({
      script: {
        models: [TEST_MODEL],
        mode: 'ordered',
        replies: [
          { toolCalls: [{ id: 'c1', name: 'nap', arguments: JSON.stringify({ ms: 1500 }) }] },
          { text: 'napped' },
          { toolCalls: [{ id: 'c2', name: 'sleep', arguments: JSON.stringify({ ms: 50 }) }] },
          { text: 'slept' },
        ],
      },
    });
    store = SqliteSessionStore.open(join(dir, 'sessions.db'));
    connection = await Connection.connect({ address: inject('temporalAddress') });
    config = {
      address: inject('temporalAddress'),
      namespace: inject('temporalNamespace'),
      taskQueue: `policy-crash-${process.pid}-${Date.now()}`,
      workflowBundlePath: inject('workflowBundlePath'),
      storePath: join(dir, 'sessions.db'),
      providerBaseURL: provider.url,
      runLog,
      idleTimeoutMs: 5_000,
      policyFile,
    };
  });
  afterAll(async () => {
    await Promise.all(children.map((c) => c.stop(2_000)));
    await connection?.close();
    await store?.close();
    await provider?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const startWorker = async (failpoints: 'tool-running'[] = []) => {
    const child = await startChildWorker(config, { failpoints, failpointLog: join(dir, 'failpoints.log') });
    children.push(child);
    return child;
  };
  const runs = (callId: string) =>
    readFileSync(runLog, 'utf8')
      .split('\n')
      .filter((line) => line === callId).length;

  it('one verdict per call, acted on by the next worker even after the policy changed', async () => {
    const sessionId = `policy-crash-${Date.now()}`;
    writePolicy('v1', [{ id: 'nap-ok', tool: 'nap', outcome: 'allow' }]);
    // Killed while the allowed (idempotent) nap runs: its verdict and start are logged, its result is not.
    const first = await startWorker(['tool-running']);
    const client = new Client({ connection, namespace: config.namespace });
    const handle = await client.workflow.start(agentSession, {
      workflowId: sessionWorkflowId(sessionId),
      taskQueue: config.taskQueue,
      args: [{ sessionId }],
    });
    await handle.signal(followupSignal, { content: 'go' });
    expect(await first.exited).toMatchObject({ signal: 'SIGKILL' });
    const atKill = await store.read(sessionId);
    expect(verdicts(atKill, 'c1')).toHaveLength(1);
    expect(result(atKill, 'c1')).toBeUndefined();

    // The file now denies naps and leaves sleep to an approver; the logged verdict still stands for c1.
    writePolicy('v2', [{ id: 'nap-no', tool: 'nap', outcome: 'deny' }]);
    const second = await startWorker();
    let events = await waitForTurnEnd(store, sessionId, 1, 60_000);
    expect(verdicts(events, 'c1')).toEqual([
      expect.objectContaining({ outcome: 'allow', rule: 'nap-ok', version: 'v1' }),
    ]);
    expect(result(events, 'c1')).toMatchObject({ status: 'ok', output: 'slept 1500 ms' });
    expect(runs('c1')).toBe(2); // idempotent: run again after the kill, as before policies existed

    // Killed while c2 waits for approval: the ask is logged once and survives the worker.
    await handle.signal(followupSignal, { content: 'again' });
    await waitForState(handle, (s) => s.pendingApproval?.callId === 'c2', 30_000);
    second.kill('SIGKILL');
    await second.exited;
    await startWorker();
    await handle.executeUpdate(approveUpdate, { args: [{ callId: approvalShortId('c2'), decision: 'approve' }] });
    events = await waitForTurnEnd(store, sessionId, 2, 60_000);
    expect(verdicts(events, 'c2')).toEqual([expect.objectContaining({ outcome: 'ask', by: 'default', version: 'v2' })]);
    expect(events.filter((e) => e.type === 'approval/request')).toHaveLength(1);
    expect(result(events, 'c2')).toMatchObject({ status: 'ok', output: 'slept 50 ms' });
    expect(runs('c2')).toBe(1);
  }, 150_000);
});

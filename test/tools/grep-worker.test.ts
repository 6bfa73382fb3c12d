// Issue 48, the tools' half: a model that calls `grep` with a backtracking regex over a line a backtracking
// engine never finishes once held `dh worker`'s event loop for good, every session on it stalled. A real
// worker now answers the call, answers a `state` query after the call was logged, and ends the turn.
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sessionWorkflowId, stateQuery } from '../../src/shared/session-messages.js';
import { dh, sessionIdOf, show, spawnDh, startLiveStack, TEST_MODEL, type LiveStack } from '../cli/live-harness.js';

const LINE = `${'a'.repeat(48)}b`;

/** The session's events as `dh log --json` prints them. */
async function loggedEvents(sessionId: string, env: NodeJS.ProcessEnv): Promise<Record<string, unknown>[]> {
  const log = await dh(['log', sessionId, '--json'], env);
  return log.stdout
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('a worker whose model greps with a backtracking regex', () => {
  let live: LiveStack;
  let connection: Connection;
  beforeAll(async () => {
    live = await startLiveStack({
      models: [TEST_MODEL],
      mode: 'match',
      replies: [
        {
          match: { lastUserContains: 'redos-grep' },
          toolCalls: [{ id: 'w1', name: 'write_file', arguments: { path: 'long.txt', content: `${LINE}\n` } }],
        },
        {
          match: { lastUserContains: 'redos-grep' },
          toolCalls: [{ id: 'g1', name: 'grep', arguments: { pattern: '(a+)+$' } }],
        },
        // Held a little, so the state query below lands while the turn still runs.
        { match: { lastUserContains: 'redos-grep' }, text: 'No match.', delayMs: 1_000 },
      ],
    });
    connection = await Connection.connect({ address: inject('temporalAddress') });
  });
  afterAll(async () => {
    await connection?.close();
    await live?.stop();
  });

  it('answers the call and a state query, and ends the turn', async () => {
    const { env } = live.stack;
    const run = spawnDh(['run', 'redos-grep: search the workspace'], env);
    const sessionId = await sessionIdOf(run);
    // Once the grep call is logged, the worker runs it (a quick tool, in the model step's activity).
    while (
      !(await loggedEvents(sessionId, env)).some(
        (e) => e.type === 'assistant/message' && JSON.stringify(e.toolCalls ?? []).includes('"g1"'),
      )
    )
      await sleep(200);
    const client = new Client({ connection, namespace: inject('temporalNamespace') });
    const state = await client.workflow.getHandle(sessionWorkflowId(sessionId)).query(stateQuery);
    expect(state.sessionId).toBe(sessionId);

    const r = await run.result;
    expect(r.code, show(r)).toBe(0);
    const result = (await loggedEvents(sessionId, env)).find((e) => e.type === 'tool/result' && e.callId === 'g1');
    expect(result).toMatchObject({
      status: 'ok',
      output: 'No matches for /(a+)+$/ (1 file searched in the workspace).',
    });
  }, 120_000);
});

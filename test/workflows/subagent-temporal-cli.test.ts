// Subagents seen and driven by a client nobody here wrote: the `temporal` CLI binary lists a parent's
// children by their search attribute, steers a child, and starts a child with a forged delegation,
// which fails without leaving a log behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporal } from '../helpers/temporal-cli.js';
import { followupSignal, sessionWorkflowId } from '../../src/shared/session-messages.js';
import { createDelegateTool } from '../../src/tools/delegate.js';
import { echoTool } from '../helpers/test-tools.js';
import { expectProviderSawTheLog, startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { waitForLog } from '../helpers/scenario-runtime.js';

describe('subagents through the temporal CLI', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'delegate and wait' },
            toolCalls: [{ id: 'w1', name: 'delegate', arguments: { task: 'patient job: wait a moment' } }],
          },
          // Streams for about 10 s: time for the CLI to list the child and steer it while this step runs.
          { match: { lastUserContains: 'patient job' }, text: 'waited '.repeat(50), chunkSize: 7, chunkDelayMs: 200 },
          { match: { lastUserContains: 'steered from the CLI' }, text: 'steer seen' },
          { match: { lastUserContains: 'delegate and wait' }, text: 'done' },
        ],
      },
      tools: [echoTool, createDelegateTool({ maxDepth: 1 })],
    });
  });
  afterAll(async () => h?.stop());

  it("lists a parent's children by DhParentSession and steers one; the steer enters the child's next step", async () => {
    const parent = 'cli-parent';
    const child = `${parent}.d1-1-0`;
    const handle = await h.start(parent);
    await handle.signal(followupSignal, { content: 'delegate and wait' });
    await waitForLog(h.store, child, (log) => log.some((e) => e.type === 'request/sent'), 'the child stepping', 30_000);

    // Visibility catches up asynchronously: poll the listing.
    let listed = '';
    for (let i = 0; i < 50 && !listed.includes(sessionWorkflowId(child)); i++) {
      const list = await temporal('workflow', 'list', '--query', `DhParentSession = "${parent}"`, '--output', 'json');
      expect(list.code).toBe(0);
      listed = list.output;
      if (!listed.includes(sessionWorkflowId(child))) await new Promise((r) => setTimeout(r, 200));
    }
    const rows = JSON.parse(listed) as { execution: { workflowId: string } }[];
    expect(rows.map((r) => r.execution.workflowId)).toEqual([sessionWorkflowId(child)]);

    const steer = await temporal(
      'workflow',
      'signal',
      '--workflow-id',
      sessionWorkflowId(child),
      '--name',
      'steer',
      '--input',
      JSON.stringify({ content: 'steered from the CLI', source: 'temporal-cli' }),
    );
    expect(steer).toMatchObject({ code: 0 });
    const events = await waitForTurnEnd(h.store, parent, 1, 60_000);
    const childLog = await h.store.read(child);
    expect(childLog.find((e) => e.type === 'user/message' && e.origin === 'steer')).toMatchObject({
      turn: 1,
      step: 2,
      source: 'temporal-cli',
    });
    expect(events.find((e) => e.type === 'tool/result')?.type === 'tool/result').toBe(true);
    const result = events.find((e) => e.type === 'tool/result');
    expect(result?.type === 'tool/result' && result.output).toContain('steer seen');
    h.sessionIds.add(child);
    await expectProviderSawTheLog(h, [parent, child]);
  }, 90_000);

  it('a child started with a forged delegation fails with DELEGATION_NOT_FOUND and leaves no log', async () => {
    const forged = {
      sessionId: 'forged-child',
      delegation: { parentSessionId: 'cli-parent', callId: 'no-such-call', depth: 1, workspaceSessionId: 'cli-parent' },
    };
    const start = await temporal(
      'workflow',
      'start',
      '--type',
      'agentSession',
      '--task-queue',
      h.taskQueue,
      '--workflow-id',
      sessionWorkflowId(forged.sessionId),
      '--input',
      JSON.stringify(forged),
    );
    expect(start).toMatchObject({ code: 0 });
    const outcome = await temporal('workflow', 'result', '--workflow-id', sessionWorkflowId(forged.sessionId));
    expect(outcome.code).not.toBe(0);
    expect(outcome.output).toContain('has no delegation call "no-such-call"');
    // The failure's type, as the history records it, is the stable code.
    const history = await temporal(
      'workflow',
      'show',
      '--workflow-id',
      sessionWorkflowId(forged.sessionId),
      '--output',
      'json',
    );
    expect(history.output).toMatch(/"type":\s*"DELEGATION_NOT_FOUND"/);
    await expect(h.store.head(forged.sessionId)).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' });
  }, 60_000);
});

// Forking and resuming a parent of subagents through `dh` processes on a live stack (a `dh worker` with
// DH_SUBAGENT_DEPTH=1): children are history. A fork's seed keeps the links to the origin's children and
// starts none; the fork's own delegations start children of its own; a fork point inside an open delegation
// call is refused; a resumed parent whose run stopped mid-delegation gets the call answered by repair
// (outcome unknown) and neither restarts nor waits for the child.
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { childSessionIdFor, TOOL_OUTCOME_UNKNOWN, usageTotal, type SessionEvent } from '../../src/core/index.js';
import { sessionWorkflowId } from '../../src/shared/session-messages.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { dh, sessionIdOf, show, spawnDh, startLiveStack, TEST_MODEL, type LiveStack } from './live-harness.js';

describe('dh fork and dh resume of a parent of subagents', () => {
  let live: LiveStack;
  let env: NodeJS.ProcessEnv;
  let connection: Connection;
  let client: Client;
  let store: SqliteSessionStore;

  beforeAll(async () => {
    live = await startLiveStack(
      {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'fork-task' },
            toolCalls: [{ id: 'd1', name: 'delegate', arguments: { task: 'first-child: answer' } }],
          },
          { match: { lastUserContains: 'first-child' }, text: 'first child answer' },
          { match: { lastUserContains: 'fork-task' }, text: 'parent done' },
          {
            match: { lastUserContains: 'again-task' },
            toolCalls: [{ id: 'd1', name: 'delegate', arguments: { task: 'second-child: answer' } }],
          },
          { match: { lastUserContains: 'second-child' }, text: 'second child answer' },
          { match: { lastUserContains: 'again-task' }, text: 'fork done' },
          {
            match: { lastUserContains: 'slow-task' },
            toolCalls: [{ id: 's1', name: 'delegate', arguments: { task: 'slow-child: stream' } }],
          },
          // Minutes long: only the parent's end stops it.
          { match: { lastUserContains: 'slow-child' }, text: 'word '.repeat(4000), chunkSize: 5, chunkDelayMs: 50 },
        ],
      },
      { DH_SUBAGENT_DEPTH: '1' },
    );
    env = live.stack.env;
    connection = await Connection.connect({ address: inject('temporalAddress') });
    client = new Client({ connection, namespace: inject('temporalNamespace') });
    store = SqliteSessionStore.open(join(live.stack.home, 'sessions.db'));
  });

  afterAll(async () => {
    await store?.close();
    await connection?.close();
    await live?.stop();
  });

  const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) =>
    events.filter((e): e is Extract<SessionEvent, { type: T }> => e.type === type);

  async function waitFor(sessionId: string, done: (events: SessionEvent[]) => boolean, what: string) {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const events = await store.read(sessionId).catch(() => []);
      if (done(events)) return events;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`${what}: not within 60 s\n${live.worker.stderr().slice(-3000)}`);
  }

  it("a fork keeps the links to the origin's children, starts none, and its own delegations start its own", async () => {
    const ran = await dh(['run', 'fork-task: delegate a question'], env);
    expect(ran.code, show(ran)).toBe(0);
    const parent = /dh: session (\S+) /.exec(ran.stderr)?.[1] ?? '';
    const child = childSessionIdFor(parent, 1, 1, 0);
    const events = await store.read(parent);
    const childRun = (await client.workflow.getHandle(sessionWorkflowId(child)).describe()).runId;
    const childHead = await store.head(child);

    // Inside the open delegation call (after its tool/start): refused, the turn is open there.
    const startSeq = ofType(events, 'tool/start')[0]?.seq ?? -1;
    const inside = await dh(['fork', parent, '--at', String(startSeq + 1), '--as', `${parent}-inside`], env);
    expect(inside.code, show(inside)).toBe(1);
    expect(inside.stderr).toContain('turn 1 is open at that point');

    const forkId = `${parent}-f`;
    const forked = await dh(['fork', parent, '--at', String(events.length), '--as', forkId], env);
    expect(forked.code, show(forked)).toBe(0);
    const seed = await store.read(forkId);
    // The seed keeps both sides of the link, as the origin logged them.
    expect(ofType(seed, 'tool/start')).toEqual(ofType(events, 'tool/start'));
    expect(ofType(seed, 'tool/result')).toEqual(ofType(events, 'tool/result'));
    expect(ofType(seed, 'tool/result')[0]?.child).toMatchObject({ sessionId: child, reason: 'completed' });
    // No child was started or touched: the same sessions, the child's log and run as they were.
    expect((await store.list()).map((s) => s.sessionId).sort()).toEqual([parent, child, forkId].sort());
    expect(await store.head(child)).toBe(childHead);
    const described = await client.workflow.getHandle(sessionWorkflowId(child)).describe();
    expect([described.runId, described.status.name]).toEqual([childRun, 'COMPLETED']);

    const tokens = usageTotal(ofType(events, 'tool/result')[0]!.child!.usage);
    const [shown, audit] = await Promise.all([dh(['show', forkId], env), dh(['audit', forkId], env)]);
    expect(shown.stdout).toMatch(
      new RegExp(
        `^ {2}d1\\s+1\\.1\\s+${esc(child)}\\s+completed\\s+${tokens}\\s+in the seed \\(a child of the origin\\)$`,
        'm',
      ),
    );
    expect(audit.code, show(audit)).toBe(0);
    expect(audit.stdout).toContain(
      `  d1 at 1.1 (seed, from ${parent}) → ${child}: completed, ${tokens} tokens; link ok; its audit PASSED (1 request(s))\n`,
    );

    // The fork delegates on its own: a new child, the fork's, in the fork's workspace.
    const again = await dh(['run', '--session', forkId, 'again-task: delegate another question'], env);
    expect(again.code, show(again)).toBe(0);
    expect(again.stdout).toBe('fork done\n');
    const second = childSessionIdFor(forkId, 2, 1, 0);
    const secondLog = await store.read(second);
    expect(secondLog[0]).toMatchObject({
      type: 'session/start',
      delegation: { parentSessionId: forkId, callId: 'd1', depth: 1, workspaceSessionId: forkId },
    });
    const [forkAudit, listed] = await Promise.all([dh(['audit', forkId], env), dh(['ls', '--json'], env)]);
    expect(forkAudit.code, show(forkAudit)).toBe(0);
    expect(forkAudit.stdout).toContain('subagents: 2 linked, 2 audited; every link holds both ways\n');
    expect(forkAudit.stdout).toContain(`  d1 at 2.1 → ${second}: completed, `);
    const rows = JSON.parse(listed.stdout) as { sessionId: string; depth: number; subagentOf: unknown }[];
    const tree = rows.map((r) => [r.sessionId, r.depth, r.subagentOf]);
    expect(tree.slice(tree.findIndex(([id]) => id === forkId)).slice(0, 2)).toEqual([
      [forkId, 0, null],
      [second, 1, { sessionId: forkId, callId: 'd1' }],
    ]);
    // The origin's audit is unchanged by the fork: one child, linked both ways.
    const originAudit = await dh(['audit', parent], env);
    expect(originAudit.code, show(originAudit)).toBe(0);
    expect(originAudit.stdout).toContain('subagents: 1 linked, 1 audited; every link holds both ways\n');
  }, 180_000);

  it('a parent resumed after its run stopped mid-delegation: repair answers the call, the child is not restarted', async () => {
    const run = spawnDh(['run', 'slow-task: delegate a long job'], env);
    const parent = await sessionIdOf(run);
    const child = childSessionIdFor(parent, 1, 1, 0);
    await run.waitFor(/⇢ subagent \S+ started \(s1\)/, 60_000);
    await waitFor(child, (log) => log.some((e) => e.type === 'step/start'), 'the child stepping');
    const childRun = (await client.workflow.getHandle(sessionWorkflowId(child)).describe()).runId;

    // The parent's run goes away mid-call; its child is cancelled (REQUEST_CANCEL) and ends its turn.
    await client.workflow.getHandle(sessionWorkflowId(parent)).terminate('operator stopped the parent');
    const childLog = await waitFor(child, (log) => log.some((e) => e.type === 'turn/end'), "the child's turn end");
    expect(ofType(childLog, 'turn/end').map((e) => e.reason)).toEqual(['aborted']);
    const stopped = await run.result;
    expect(stopped.code, show(stopped)).not.toBe(0);
    const before = await store.read(parent);
    expect(ofType(before, 'tool/start')[0]).toMatchObject({ callId: 's1', child });
    expect(ofType(before, 'tool/result')).toEqual([]);
    // A fork cannot start inside the open call either.
    const inside = await dh(['fork', parent, '--at', String(before.length), '--as', `${parent}-open`], env);
    expect(inside.stderr).toContain('turn 1 is open at that point');

    const resumed = await dh(['resume', parent], env);
    expect(resumed.code, show(resumed)).toBe(0);
    const after = await waitFor(parent, (log) => log.some((e) => e.type === 'turn/end'), 'the repair');
    expect(ofType(after, 'tool/result')).toMatchObject([
      { callId: 's1', name: 'delegate', status: 'interrupted', output: TOOL_OUTCOME_UNKNOWN },
    ]);
    expect(ofType(after, 'tool/result')[0]?.child).toBeUndefined();
    expect(ofType(after, 'turn/end').map((e) => e.reason)).toEqual(['interrupted']);
    // The child is history: not restarted, not waited for, its log as its cancelled run left it.
    expect(await store.read(child)).toEqual(childLog);
    const described = await client.workflow.getHandle(sessionWorkflowId(child)).describe();
    expect([described.runId, described.status.name]).toEqual([childRun, 'CANCELLED']);

    const [shown, audit] = await Promise.all([dh(['show', parent], env), dh(['audit', parent], env)]);
    expect(shown.stdout).toMatch(new RegExp(`^ {2}s1\\s+1\\.1\\s+${esc(child)}\\s+no outcome\\s+-$`, 'm'));
    expect(audit.code, show(audit)).toBe(0);
    expect(audit.stdout).toContain(
      `    note: the call ended interrupted before subagent ${child} reported: no outcome or usage is recorded\n`,
    );
    // After the repaired turn the parent forks like any session; the seed keeps the unanswered link.
    const forked = await dh(['fork', parent, '--at', String(after.length), '--as', `${parent}-f`], env);
    expect(forked.code, show(forked)).toBe(0);
    const forkAudit = await dh(['audit', `${parent}-f`], env);
    expect(forkAudit.code, show(forkAudit)).toBe(0);
    expect(forkAudit.stdout).toContain(`  s1 at 1.1 (seed, from ${parent}) → ${child}: no outcome recorded; link ok;`);
  }, 180_000);
});

function esc(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

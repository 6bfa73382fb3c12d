// The operator's views of a session tree through `dh` child processes on a live stack (a `dh worker` with
// DH_SUBAGENT_DEPTH=1 on the scripted provider, the run's Temporal server): run and attach show a subagent
// start, its pending approval with the exact `dh approve` command, and its end; ls draws the child under its
// parent (online and offline); show, log and audit describe the links; a forged child fails the audit.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalShortId, childSessionIdFor, usageTotal, type SessionEvent } from '../../src/core/index.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { forgeStoredRows } from '../helpers/forge-log.js';
import { dh, sessionIdOf, show, spawnDh, startLiveStack, TEST_MODEL, type LiveStack } from './live-harness.js';

const FINAL = 'The child wrote the note.';

describe('dh run / attach / ls / show / log / audit over a parent and its subagent', () => {
  let live: LiveStack;
  let env: NodeJS.ProcessEnv;
  let parent = '';
  let child = '';

  beforeAll(async () => {
    live = await startLiveStack(
      {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'tree-task' },
            toolCalls: [
              { id: 'd1', name: 'delegate', arguments: { task: 'child-note: write the note', tools: ['write_file'] } },
            ],
          },
          {
            match: { lastUserContains: 'child-note' },
            text: 'Writing it.',
            toolCalls: [{ id: 'w1', name: 'write_file', arguments: { path: 'note.txt', content: 'from the child' } }],
          },
          // Slow enough that a viewer's poll sees the approval decided before the child ends.
          { match: { lastUserContains: 'child-note' }, text: 'note written', delayMs: 3000 },
          { match: { lastUserContains: 'tree-task' }, text: FINAL },
        ],
      },
      { DH_SUBAGENT_DEPTH: '1', DH_APPROVAL_ASK: 'write_file' },
    );
    env = live.stack.env;
  });

  afterAll(() => live?.stop());

  async function read(sessionId: string): Promise<SessionEvent[]> {
    const store = SqliteSessionStore.open(join(live.stack.home, 'sessions.db'));
    try {
      return await store.read(sessionId);
    } finally {
      await store.close();
    }
  }

  it('run and attach show the child start, its approval with the command that decides it, and its end', async () => {
    const run = spawnDh(['run', 'tree-task: have a subagent write the note'], env);
    parent = await sessionIdOf(run);
    child = childSessionIdFor(parent, 1, 1, 0);
    await run.waitFor(new RegExp(`⇢ subagent ${escape(child)} started \\(d1\\); watch it: dh attach ${escape(child)}`));
    const attach = spawnDh(['attach', parent], env);

    // Both viewers of the parent learn that the child waits, and how to decide it.
    const shortId = approvalShortId('w1');
    const asked = new RegExp(
      `⏸ subagent ${escape(child)}: write_file needs approval \\[${shortId}\\]: approval-policy: write_file needs approval\\n` +
        `  dh approve ${escape(child)} ${shortId}   · --deny · --remember tool\\n`,
    );
    await run.waitFor(asked, 60_000);
    await attach.waitFor(asked, 30_000);
    // Approved as the hint says: the child's session id and the short id.
    const [, session, call] = /dh approve (\S+) (\S+) {3}·/.exec(run.stderr()) ?? [];
    expect([session, call]).toEqual([child, shortId]);
    const approved = await dh(['approve', session as string, call as string], env);
    expect(approved.code, show(approved)).toBe(0);

    const [ran, attached] = await Promise.all([run.result, attach.result]);
    expect(ran.code, show(ran)).toBe(0);
    expect(ran.stdout).toBe(`${FINAL}\n`);
    const outcome = (await read(parent)).find((e) => e.type === 'tool/result' && e.child !== undefined);
    const tokens = outcome?.type === 'tool/result' && outcome.child ? usageTotal(outcome.child.usage) : -1;
    expect(tokens).toBeGreaterThan(0);
    const ended = `⇠ subagent ${child} (d1) ended completed, ${tokens} tokens: note written\n`;
    expect(ran.stderr).toContain(ended);
    expect(ran.stderr).toContain(`  subagent ${child}: w1 no longer waits for approval\n`);
    // Printed once, not at every poll.
    expect(ran.stderr.split('⏸ subagent').length, show(ran)).toBe(2);
    expect(attached.code, show(attached)).toBe(0);
    expect(attached.stdout).toBe(`${FINAL}\n`);
    expect(attached.stderr).toContain(ended);
    expect((await read(child)).some((e) => e.type === 'approval/decision' && e.decision === 'approve')).toBe(true);
  }, 120_000);

  it('ls draws the child under its parent with its status, from Temporal and offline', async () => {
    const table = await dh(['ls'], env);
    expect(table.code, show(table)).toBe(0);
    const lines = table.stdout.split('\n');
    const at = lines.findIndex((l) => l.startsWith(`${parent} `));
    expect(at, show(table)).toBeGreaterThan(0);
    expect(lines[at]).toMatch(new RegExp(`^${escape(parent)}\\s+idle\\s+\\d+\\s+`));
    expect(lines[at + 1]).toMatch(new RegExp(`^└─ ${escape(child)} \\(d1\\)\\s+closed\\s+\\d+\\s+\\S+ \\S+$`));

    const json = await dh(['ls', '--json'], env);
    const rows = JSON.parse(json.stdout) as { sessionId: string; status: string; depth: number; subagentOf: unknown }[];
    expect(rows.map((r) => [r.sessionId, r.status, r.depth, r.subagentOf])).toEqual([
      [parent, 'idle', 0, null],
      [child, 'closed', 1, { sessionId: parent, callId: 'd1' }],
    ]);

    // Offline: the tree comes from the store alone (statuses unknown).
    const offline = await dh(['ls'], { ...env, TEMPORAL_ADDRESS: '127.0.0.1:9' });
    expect(offline.code, show(offline)).toBe(0);
    expect(offline.stderr).toContain('statuses unknown');
    const off = offline.stdout.split('\n');
    expect(off[1]).toMatch(new RegExp(`^${escape(parent)}\\s+-\\s+`));
    expect(off[2]).toMatch(new RegExp(`^└─ ${escape(child)} \\(d1\\)\\s+-\\s+`));
    // A listing that leaves the parent out says whose the child is.
    const cut = await dh(['ls', '--limit', '1'], { ...env, TEMPORAL_ADDRESS: '127.0.0.1:9' });
    expect(cut.stdout.split('\n')[1]).toMatch(new RegExp(`^${escape(child)} \\(d1\\).*subagent of ${escape(parent)}$`));
  }, 60_000);

  it('show lists the children with how each ended and its tokens; log renders the links', async () => {
    const events = await read(parent);
    const result = events.find((e) => e.type === 'tool/result' && e.child !== undefined);
    const start = events.find((e) => e.type === 'tool/start' && e.child !== undefined);
    const tokens = result?.type === 'tool/result' && result.child ? usageTotal(result.child.usage) : -1;
    const [shown, shownChild, log] = await Promise.all([
      dh(['show', parent], env),
      dh(['show', child], env),
      dh(['log', parent], env),
    ]);
    expect(shown.code, show(shown)).toBe(0);
    expect(shown.stdout).toMatch(
      new RegExp(`^subagents: 1 \\(1 completed\\), ${tokens} tokens; with the session's own: \\d+ tokens$`, 'm'),
    );
    expect(shown.stdout).toMatch(/^ {2}call\s+step\s+subagent\s+ended\s+tokens$/m);
    expect(shown.stdout).toMatch(new RegExp(`^ {2}d1\\s+1\\.1\\s+${escape(child)}\\s+completed\\s+${tokens}$`, 'm'));
    expect(shownChild.stdout.split('\n')[0]).toBe(`session ${child} (subagent of ${parent}, call d1, depth 1)`);
    const json = JSON.parse((await dh(['show', parent, '--json'], env)).stdout) as { subagents: unknown };
    expect(json.subagents).toEqual([
      { callId: 'd1', turn: 1, step: 1, sessionId: child, ended: 'completed', tokens, inSeed: false },
    ]);
    expect(log.stdout).toContain(`tool/start         1.1 delegate d1 → subagent ${child}\n`);
    expect(log.stdout).toContain(
      `tool/result        1.1 delegate d1 ok ← subagent ${child} completed, ${tokens} tokens: "Subagent ${child} finished`,
    );
    expect(start?.seq).toBeLessThan(result?.seq ?? 0);
  });

  it('audit checks the tree both ways and audits the child; a forged child fails it precisely', async () => {
    const tokens = usageTotal(
      (await read(parent)).flatMap((e) => (e.type === 'tool/result' && e.child ? [e.child.usage] : []))[0]!,
    );
    const audit = await dh(['audit', parent], env);
    expect(audit.code, show(audit)).toBe(0);
    expect(audit.stdout).toContain('subagents: 1 linked, 1 audited; every link holds both ways\n');
    expect(audit.stdout).toContain(
      `  d1 at 1.1 → ${child}: completed, ${tokens} tokens; link ok; its audit PASSED (2 request(s))\n`,
    );
    const alone = await dh(['audit', child], env);
    expect(alone.code, show(alone)).toBe(0);
    expect(alone.stdout).toContain(`parent link: ${parent}, call d1: its log names this session from that call\n`);
    expect(alone.stdout).toMatch(/^history mirror: ok \(1 run\(s\)/m);

    // The child's start rewritten to name another call (chain recomputed, as a careful forger would).
    const path = join(live.stack.home, 'sessions.db');
    const events = await read(child);
    forgeStoredRows(
      path,
      child,
      events.map((e) =>
        e.type === 'session/start' && e.delegation ? { ...e, delegation: { ...e.delegation, callId: 'd7' } } : e,
      ),
      true,
    );
    const forged = await dh(['audit', parent, '--no-mirror'], env);
    expect(forged.code, show(forged)).toBe(1);
    expect(forged.stdout).toContain('subagents: 1 linked, 1 audited; 1 link(s) BROKEN\n');
    expect(forged.stdout).toContain(
      `AUDIT FAILED (1 problem(s)):\n  - delegation call d1 at 1.1: subagent ${child}'s session/start.delegation ` +
        `names call "d7", but it is linked from call "d1"\n`,
    );
    const forgedAlone = await dh(['audit', child, '--no-mirror'], env);
    expect(forgedAlone.code, show(forgedAlone)).toBe(1);
    expect(forgedAlone.stdout).toContain(
      `  - parent link: session/start.delegation names ${parent}'s call "d7", but its log names it from call "d1" at 1.1\n`,
    );
  }, 60_000);
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// The audit of a session tree in a real SQLite store: a parent's delegation links to its subagents are
// checked from both sides and each subagent is audited in turn. Logs are written through the core, then
// hand-forged behind the store's back (test/helpers/forge-log.ts) the way someone with write access would.
import { afterEach, describe, expect, it } from 'vitest';
import { auditSession } from '../../src/audit/audit-session.js';
import {
  childSessionIdFor,
  delegationResult,
  forkEvents,
  Session,
  usageTotal,
  type SessionEvent,
} from '../../src/core/index.js';
import { forkAnchor, createSessionFromLog } from '../../src/operations/session-transfer.js';
import { forgeStoredRows } from '../helpers/forge-log.js';
import { LogDriver } from '../helpers/log-generator.js';
import { tempStore, withRequestSent, writeLog, type TempStore } from './audited-log.js';

const stores: TempStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.cleanup();
});
function open(): TempStore {
  const s = tempStore('dh-audit-subagents-');
  stores.push(s);
  return s;
}

const PARENT = 'tree';
const CHILD = childSessionIdFor(PARENT, 1, 1, 0);
const LINK = 'delegation call d1 at 1.1';

/** A subagent's log: its delegation, its task as a followup, one answer. */
async function childLog(
  childId: string,
  delegation: { parentSessionId: string; callId: string; depth?: number },
  turns = 1,
): Promise<SessionEvent[]> {
  const driver = new LogDriver(childId);
  for (let t = 0; t < turns; t++) {
    driver.run([
      { kind: 'send', origin: 'followup', text: t === 0 ? 'the delegated task' : 'one more thing' },
      { kind: 'step', toolCalls: 0, text: `child answer ${t + 1}`, changeHeader: false, skipLastTool: false },
      { kind: 'end-turn' },
    ]);
  }
  const events = driver.session.events.map((e) =>
    e.type === 'session/start'
      ? {
          ...e,
          delegation: {
            parentSessionId: delegation.parentSessionId,
            callId: delegation.callId,
            depth: delegation.depth ?? 1,
            workspaceSessionId: delegation.parentSessionId,
          },
        }
      : e,
  );
  return withRequestSent(childId, events);
}

/**
 * A parent whose first step calls `delegate` (call d1) and gets the child's outcome, read from `child`
 * (null: the call was interrupted before its child reported, as repair answers it).
 */
async function parentLog(
  parentId: string,
  childId: string,
  child: readonly SessionEvent[] | null,
): Promise<SessionEvent[]> {
  const driver = new LogDriver(parentId).run([
    { kind: 'send', origin: 'followup', text: 'split the work' },
    { kind: 'step', toolCalls: 1, text: 'Delegating.', changeHeader: false, skipLastTool: false },
    { kind: 'step', toolCalls: 0, text: 'The child answered.', changeHeader: false, skipLastTool: false },
    { kind: 'end-turn' },
  ]);
  const outcome = child ? delegationResult(childId, child) : null;
  const events = driver.session.events.map((e): SessionEvent => {
    if (e.type === 'assistant/message' && e.toolCalls.length > 0) {
      return { ...e, toolCalls: [{ id: 'd1', name: 'delegate', arguments: '{"task":"the delegated task"}' }] };
    }
    if (e.type === 'tool/start') return { ...e, callId: 'd1', name: 'delegate', child: childId };
    if (e.type === 'tool/result') {
      return outcome
        ? { ...e, callId: 'd1', name: 'delegate', status: outcome.status, output: outcome.output, child: outcome.child }
        : { ...e, callId: 'd1', name: 'delegate', status: 'interrupted', output: 'outcome unknown' };
    }
    return e;
  });
  return withRequestSent(parentId, events);
}

async function writeTree(s: TempStore): Promise<{ parent: SessionEvent[]; child: SessionEvent[] }> {
  const child = await childLog(CHILD, { parentSessionId: PARENT, callId: 'd1' });
  const parent = await parentLog(PARENT, CHILD, child);
  await writeLog(s.store, PARENT, parent);
  await writeLog(s.store, CHILD, child);
  return { parent, child };
}

describe('auditSession over a session tree', () => {
  it("passes a clean tree: the link holds both ways, the child's usage matches, the child is audited too", async () => {
    const s = open();
    const { child } = await writeTree(s);
    const report = await auditSession({ store: s.store, sessionId: PARENT });
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.summary.subagents).toEqual([
      {
        callId: 'd1',
        turn: 1,
        step: 1,
        childSessionId: CHILD,
        inSeed: false,
        owner: PARENT,
        recorded: { reason: 'completed', tokens: usageTotal(delegationResult(CHILD, child).child.usage) },
        childLog: true,
        problems: [],
        notes: [],
      },
    ]);
    expect(report.children.map((c) => [c.sessionId, c.ok, c.rows.length])).toEqual([[CHILD, true, 1]]);
    expect(report.summary.parentLink).toBeNull();
    // Audited on its own, the child finds its parent's link to it.
    const alone = await auditSession({ store: s.store, sessionId: CHILD });
    expect(alone.failures).toEqual([]);
    expect(alone.summary.parentLink).toEqual({
      parentSessionId: PARENT,
      callId: 'd1',
      status: 'ok',
      problem: null,
    });
  });

  it('fails a child whose hand-forged delegation names another call, naming the link and the side', async () => {
    const s = open();
    const { child } = await writeTree(s);
    const forged = child.map((e) =>
      e.type === 'session/start' && e.delegation ? { ...e, delegation: { ...e.delegation, callId: 'd9' } } : e,
    );
    forgeStoredRows(s.path, CHILD, forged, true);
    const report = await auditSession({ store: s.store, sessionId: PARENT });
    expect(report.ok).toBe(false);
    expect(report.failures).toEqual([
      `${LINK}: subagent ${CHILD}'s session/start.delegation names call "d9", but it is linked from call "d1"`,
    ]);
    // The child's own log is sound (its chain was recomputed): only the link is wrong.
    expect(report.children.map((c) => [c.sessionId, c.ok])).toEqual([[CHILD, true]]);
    const alone = await auditSession({ store: s.store, sessionId: CHILD });
    expect(alone.failures).toEqual([
      `parent link: session/start.delegation names ${PARENT}'s call "d9", but its log names it from call "d1" at 1.1`,
    ]);
  });

  it("fails a forged parent-side record: the child's usage, the result's child, or a missing child log", async () => {
    const s = open();
    const { parent, child } = await writeTree(s);
    const spent = delegationResult(CHILD, child).child;
    const resultSeq = parent.find((e) => e.type === 'tool/result')?.seq ?? -1;
    const withResult = (edit: (e: Extract<SessionEvent, { type: 'tool/result' }>) => SessionEvent) =>
      parent.map((e) => (e.type === 'tool/result' ? edit(e) : e));

    forgeStoredRows(
      s.path,
      PARENT,
      withResult((e) => ({ ...e, child: { ...spent, usage: { ...spent.usage, output: spent.usage.output + 7 } } })),
      true,
    );
    let report = await auditSession({ store: s.store, sessionId: PARENT });
    const u = spent.usage;
    const total = usageTotal(u);
    expect(report.failures).toEqual([
      `${LINK}: the tool/result (seq ${resultSeq}) records subagent ${CHILD} as completed, ${total + 7} tokens ` +
        `(in ${u.inputUncached} + ${u.cacheRead} cached, out ${u.output + 7} + ${u.reasoning} reasoning); ` +
        `its log adds up to completed, ${total} tokens ` +
        `(in ${u.inputUncached} + ${u.cacheRead} cached, out ${u.output} + ${u.reasoning} reasoning)`,
    ]);

    forgeStoredRows(
      s.path,
      PARENT,
      withResult((e) => ({ ...e, child: { ...spent, sessionId: 'someone-else' } })),
      true,
    );
    report = await auditSession({ store: s.store, sessionId: PARENT });
    const startSeq = parent.find((e) => e.type === 'tool/start')?.seq ?? -1;
    expect(report.failures).toEqual([
      `${LINK}: its tool/start (seq ${startSeq}) names subagent ${CHILD}, its tool/result (seq ${resultSeq}) names someone-else`,
    ]);

    // The recorded child is not in the store at all.
    const other = childSessionIdFor(PARENT, 1, 1, 5);
    forgeStoredRows(
      s.path,
      PARENT,
      parent.map((e) =>
        e.type === 'tool/start'
          ? { ...e, child: other }
          : e.type === 'tool/result'
            ? { ...e, child: { ...spent, sessionId: other } }
            : e,
      ),
      true,
    );
    report = await auditSession({ store: s.store, sessionId: PARENT });
    expect(report.failures).toEqual([
      `${LINK}: subagent ${other}'s log is not in the store, but the tool/result (seq ${resultSeq}) records its outcome`,
      // …and the real child now names a call of this session that links it from nowhere.
      `subagent ${CHILD}: its session/start.delegation names this session's call "d1", ` +
        'but no tool/start or tool/result of this session names it',
    ]);
  });

  it('fails a subagent that names this session but is linked from nowhere', async () => {
    const s = open();
    await writeTree(s);
    // Named as the workflow names children (the audit looks among the ids a child of this session can have).
    const stray = `${PARENT}.d9-9-9`;
    await writeLog(s.store, stray, await childLog(stray, { parentSessionId: PARENT, callId: 'd1' }));
    const report = await auditSession({ store: s.store, sessionId: PARENT });
    expect(report.failures).toEqual([
      `subagent ${stray}: its session/start.delegation names this session's call "d1", ` +
        'but no tool/start or tool/result of this session names it',
    ]);
  });

  it('accepts a call interrupted before its child started, and a child that went on after reporting', async () => {
    const s = open();
    // Interrupted before the child existed: tool/start names it, the repaired result has no outcome.
    const parent = await parentLog(PARENT, CHILD, null);
    await writeLog(s.store, PARENT, parent);
    let report = await auditSession({ store: s.store, sessionId: PARENT });
    expect(report.failures).toEqual([]);
    expect(report.summary.subagents[0]).toMatchObject({
      childSessionId: CHILD,
      recorded: null,
      childLog: false,
      notes: [`the call ended interrupted before subagent ${CHILD} was started (it has no log)`],
    });

    // A child that ran a second turn after its parent recorded its first (resumed on its own, say).
    const t = open();
    const reported = await childLog(CHILD, { parentSessionId: PARENT, callId: 'd1' });
    const longer = await childLog(CHILD, { parentSessionId: PARENT, callId: 'd1' }, 2);
    await writeLog(t.store, PARENT, await parentLog(PARENT, CHILD, reported));
    await writeLog(t.store, CHILD, longer);
    report = await auditSession({ store: t.store, sessionId: PARENT });
    expect(report.failures).toEqual([]);
    expect(report.summary.subagents[0]?.notes).toEqual([
      `subagent ${CHILD}'s log went on after its outcome was recorded (the record matches its log up to seq ${reported.length - 1})`,
    ]);
  });

  it("a fork's seed links point at the origin's children; a seed child naming the fork fails", async () => {
    const s = open();
    const { parent } = await writeTree(s);
    const forkId = 'tree-fork';
    const fork = forkEvents(new Session(PARENT, parent), { sessionId: forkId, atSeq: parent.length, at: 2 });
    const anchor = await forkAnchor(s.store, PARENT, parent.length);
    await createSessionFromLog(s.store, forkId, fork, anchor !== undefined ? { chainAnchor: anchor } : {});
    const report = await auditSession({ store: s.store, sessionId: forkId });
    expect(report.failures).toEqual([]);
    expect(report.summary.subagents).toMatchObject([{ childSessionId: CHILD, inSeed: true, owner: PARENT }]);
    expect(report.children.map((c) => [c.sessionId, c.ok])).toEqual([[CHILD, true]]);

    // A fork of the subagent itself is a top-level session: no delegation, nobody's child.
    const childFork = forkEvents(new Session(CHILD, await s.store.read(CHILD)), {
      sessionId: 'child-fork',
      atSeq: await s.store.head(CHILD),
      at: 3,
    });
    expect(childFork[0]).toMatchObject({ type: 'session/start', parent: { sessionId: CHILD } });
    expect(childFork[0]?.type === 'session/start' && childFork[0].delegation).toBeUndefined();
    await createSessionFromLog(s.store, 'child-fork', childFork, {
      chainAnchor: (await forkAnchor(s.store, CHILD, childFork.length - 1))!,
    });
    expect((await auditSession({ store: s.store, sessionId: PARENT })).failures).toEqual([]);
    expect((await auditSession({ store: s.store, sessionId: 'child-fork' })).summary.parentLink).toBeNull();

    // Rewritten as if the fork had started it: the seed link was made by the origin, so this is wrong.
    const childEvents = await s.store.read(CHILD);
    forgeStoredRows(
      s.path,
      CHILD,
      childEvents.map((e) =>
        e.type === 'session/start' && e.delegation
          ? { ...e, delegation: { ...e.delegation, parentSessionId: forkId, workspaceSessionId: forkId } }
          : e,
      ),
      true,
    );
    const forged = await auditSession({ store: s.store, sessionId: forkId });
    expect(forged.failures).toEqual([
      `${LINK} (in the seed): subagent ${CHILD}'s session/start.delegation names parent "${forkId}", not "${PARENT}" ` +
        '(the link is in the fork seed: the origin made it)',
      `${LINK} (in the seed): subagent ${CHILD}'s session/start.delegation shares workspace "${forkId}", expected "${PARENT}"`,
    ]);
    // The origin's own audit says the same link is broken from its side, and the child is no longer its.
    const origin = await auditSession({ store: s.store, sessionId: PARENT });
    expect(origin.failures).toEqual([
      `${LINK}: subagent ${CHILD}'s session/start.delegation names parent "${forkId}", not "${PARENT}"`,
      `${LINK}: subagent ${CHILD}'s session/start.delegation shares workspace "${forkId}", expected "${PARENT}"`,
    ]);
  });
});

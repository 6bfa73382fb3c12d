// The live `dh` commands as a user runs them: child processes against the run's Temporal server, a
// `dh worker` child on a scripted provider, and a store under a temp DH_HOME. Streaming, attach from a
// second process, steer / inject / approve from other processes, interrupt, ls, the agent catalog (agents ls,
// run --agent) and a session's overrides (set), and the error paths.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListedAgent } from '../../src/agents/agent-catalog.js';
import { approvalShortId } from '../../src/core/index.js';
import type { ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import {
  cleanEnv,
  dh,
  sessionIdOf,
  show,
  spawnDh,
  startLiveStack,
  TEST_MODEL,
  type LiveStack,
  type TestStackEnv,
} from './live-harness.js';

const STREAMED = 'The quick brown fox jumps over the lazy dog, one chunk at a time.';
const ATTACHED = 'Attached answer: forty-two, streamed slowly so a second viewer can join.';
const SLOW = 'Counting slowly: one two three four five six seven eight nine ten eleven twelve thirteen fourteen.';

describe('dh run / attach / steer / inject / approve / interrupt / ls on a live stack', () => {
  let provider: ScriptedProvider;
  let stack: TestStackEnv;
  let live: LiveStack;
  const sessions: string[] = [];

  beforeAll(async () => {
    live = await startLiveStack(
      {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'stream-task' }, text: STREAMED, chunkSize: 4, chunkDelayMs: 60 },
          { match: { lastUserContains: 'attach-task' }, text: ATTACHED, chunkSize: 4, chunkDelayMs: 150 },
          { match: { lastUserContains: 'jsonl-task' }, text: STREAMED, chunkSize: 4, chunkDelayMs: 40 },
          {
            match: { lastUserContains: 'approve-task' },
            text: 'I will write the note.',
            toolCalls: [{ id: 'w1', name: 'write_file', arguments: { path: 'note.txt', content: 'hello' } }],
          },
          { match: { lastUserContains: 'LATE' }, text: 'Steered and done.' },
          { match: { lastUserContains: 'interrupt-task' }, text: SLOW, chunkSize: 2, chunkDelayMs: 300 },
          { match: { lastUserContains: 'ctrl-c-task' }, text: SLOW, chunkSize: 2, chunkDelayMs: 300 },
          { match: { lastUserContains: 'agent-task' }, text: 'Agent answer.', repeat: 5 },
        ],
      },
      { DH_APPROVAL_ASK: 'write_file' },
    );
    ({ provider, stack } = live);
  });

  afterAll(() => live?.stop());

  it('run streams the answer to stdout as it arrives and exits 0 when the turn completes', async () => {
    const r = await spawnDh(['run', 'stream-task: say the sentence'], stack.env).result;
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe(`${STREAMED}\n`);
    // Live, not read back at the end: several chunks, the first well before the process ended.
    expect(r.stdoutTimes.length, show(r)).toBeGreaterThanOrEqual(3);
    expect(r.ms - (r.stdoutTimes[0] ?? r.ms), show(r)).toBeGreaterThan(300);
    const [, sessionId] = /dh: session (\S+) \(watch it elsewhere: dh attach \1\)/.exec(r.stderr) ?? [];
    expect(sessionId, show(r)).toBeDefined();
    sessions.push(sessionId as string);
  });

  it('run --jsonl prints frames with positions; attach --from one of them prints exactly what follows it', async () => {
    type Line = {
      position: string;
      type: string;
      text?: string;
      rest?: string;
      replaced?: boolean;
      event?: { seq: number };
    };
    const linesOf = (stdout: string) =>
      stdout
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Line);
    const run = await spawnDh(['run', '--jsonl', 'jsonl-task: stream the sentence'], stack.env).result;
    expect(run.code, show(run)).toBe(0);
    const sessionId = /dh: session (\S+) /.exec(run.stderr)?.[1] as string;
    sessions.push(sessionId);
    const frames = linesOf(run.stdout);
    expect(
      frames.every((f) => /^\d+:\d+$/.test(f.position)),
      show(run),
    ).toBe(true);
    // Streamed live: several text frames, and they with the answer's rest make the answer.
    const texts = frames.filter((f) => f.type === 'text');
    expect(texts.length, show(run)).toBeGreaterThanOrEqual(3);
    const answer = frames.find((f) => f.type === 'answer');
    expect(texts.map((f) => f.text).join('') + (answer?.rest ?? ''), show(run)).toBe(STREAMED);

    // From a frame in the middle of the stream, in another process: the rest of the text, then the events after it.
    const k = frames.indexOf(texts[1] as Line);
    const from = (frames[k] as Line).position;
    const attached = await dh(['attach', sessionId, '--from', from, '--jsonl'], stack.env);
    expect(attached.code, show(attached)).toBe(0);
    const after = linesOf(attached.stdout);
    const seen = frames
      .slice(0, k + 1)
      .filter((f) => f.type === 'text')
      .map((f) => f.text)
      .join('');
    const rest = after
      .filter((f) => f.type === 'text')
      .map((f) => f.text)
      .join('');
    const resumedAnswer = after.find((f) => f.type === 'answer');
    expect(resumedAnswer?.replaced, show(attached)).toBe(false);
    expect(seen + rest + (resumedAnswer?.rest ?? ''), show(attached)).toBe(STREAMED);
    const seqs = (lines: Line[]) => lines.flatMap((f) => (f.event !== undefined ? [f.event.seq] : []));
    const fromSeq = Number(from.split(':')[0]);
    expect(seqs(after), show(attached)).toEqual(seqs(frames).filter((seq) => seq >= fromSeq));

    const bad = await dh(['attach', sessionId, '--from', 'yesterday'], stack.env);
    expect(bad.code, show(bad)).toBe(2);
    expect(bad.stderr).toMatch(/--from: "yesterday" is not a stream position: expected <seq>:<delta>/);
  });

  it('attach from a second process follows the same turn to the same final answer', async () => {
    const run = spawnDh(['run', 'attach-task: answer slowly'], stack.env);
    const sessionId = await sessionIdOf(run);
    sessions.push(sessionId);
    const attach = spawnDh(['attach', sessionId], stack.env);
    const [ran, attached] = await Promise.all([run.result, attach.result]);
    expect(ran.code, show(ran)).toBe(0);
    expect(attached.code, show(attached)).toBe(0);
    expect(ran.stdout).toBe(`${ATTACHED}\n`);
    expect(attached.stdout).toBe(`${ATTACHED}\n`);
    // A late viewer catches up from the log: attach again after the turn ended.
    const again = await dh(['attach', sessionId, '--json'], stack.env);
    expect(again.code, show(again)).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      sessionId,
      outcome: 'idle',
      reason: 'completed',
      answer: ATTACHED,
    });
  });

  it('inject, steer and approve from other processes land in the running turn', async () => {
    const run = spawnDh(['run', 'approve-task: write a note'], stack.env);
    const sessionId = await sessionIdOf(run);
    sessions.push(sessionId);
    // The waiting call is named by its short id, with the command that decides it.
    const shortId = approvalShortId('w1');
    await run.waitFor(/ {2}dh approve \S+ \S+ {3}· --deny · --remember tool\n/);
    expect(run.stderr()).toMatch(new RegExp(`⏸ write_file needs approval \\[${shortId}\\]: [^\n]+\n`));
    expect(run.stderr()).toContain(`  dh approve ${sessionId} ${shortId}   · --deny · --remember tool\n`);

    // Four other processes at once: a wrong approval is refused; inject, steer and an acknowledged
    // next-step send queue for step 2.
    const [injected, steered, sent, wrongCall] = await Promise.all([
      dh(['inject', sessionId, 'LATE context: the branch is main', '--source', 'git-hook'], stack.env),
      dh(['steer', sessionId, 'LATE steer: keep it short'], stack.env),
      dh(
        ['send', sessionId, 'LATE send: also note the time', '--target', 'next-step', '--no-wakeup', '--json'],
        stack.env,
      ),
      dh(['approve', sessionId, 'no-such-call'], stack.env),
    ]);
    expect(injected.code, show(injected)).toBe(0);
    expect(injected.stdout).toMatch(/^injected cli-/);
    expect(steered.code, show(steered)).toBe(0);
    expect(sent.code, show(sent)).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ target: 'next-step', duplicate: false, downgraded: false });
    expect(wrongCall.code, show(wrongCall)).toBe(1);
    expect(wrongCall.stderr).toMatch(/^dh: no tool call "no-such-call" is waiting for approval\n$/);
    // By its short id: the workflow resolves it to the waiting call.
    const approved = await dh(['approve', sessionId, shortId, '--reason', 'fine', '--json'], stack.env);
    expect(approved.code, show(approved)).toBe(0);
    expect(JSON.parse(approved.stdout)).toEqual({ callId: 'w1', decision: 'approve' });

    const r = await run.result;
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe('I will write the note.\nSteered and done.\n');
    expect(r.stderr).toMatch(/→ write_file \{"path":"note.txt","content":"hello"\}/);
    expect(r.stderr).toContain(`✓ approved write_file [${shortId}] by `);
    expect(r.stderr).toMatch(/← write_file ok/);
    expect(r.stderr).toMatch(/» inject \(git-hook\): LATE context: the branch is main/);
    expect(r.stderr).toMatch(/» steer \(cli\): LATE steer: keep it short/);

    // The model saw both at step 2, and the log says who sent what.
    const step2 = provider.requests().findLast((q) => q.body.includes('approve-task'));
    const seen = JSON.stringify((JSON.parse(step2?.body ?? '{}') as { messages?: unknown }).messages);
    expect(seen).toContain('LATE context: the branch is main');
    expect(seen).toContain('LATE steer: keep it short');
    expect(seen).toContain('LATE send: also note the time');
    const store = SqliteSessionStore.open(join(stack.home, 'sessions.db'));
    try {
      const users = (await store.read(sessionId)).flatMap((e) => (e.type === 'user/message' ? [e.origin] : []));
      expect(users[0]).toBe('followup');
      // A next-step send without a wake is an inject by another name.
      expect(users.slice(1).sort()).toEqual(['inject', 'inject', 'steer']);
    } finally {
      await store.close();
    }
  });

  it('interrupt from another process ends the turn aborted: run exits 3', async () => {
    const run = spawnDh(['run', 'interrupt-task: count slowly'], stack.env);
    const sessionId = await sessionIdOf(run);
    sessions.push(sessionId);
    await run.waitFor(/Counting/);
    const interrupted = await dh(['interrupt', sessionId, '--reason', 'enough'], stack.env);
    expect(interrupted.code, show(interrupted)).toBe(0);
    const r = await run.result;
    expect(r.code, show(r)).toBe(3);
    expect(r.stdout.startsWith('Counting')).toBe(true);
    expect(r.stdout.length).toBeLessThan(SLOW.length);
    expect(r.stderr).toMatch(/■ turn 1 ended: aborted/);
  });

  it('Ctrl-C in run interrupts the turn (exit 3); the session stays open', async () => {
    const run = spawnDh(['run', 'ctrl-c-task: count slowly'], stack.env);
    sessions.push(await sessionIdOf(run));
    await run.waitFor(/Counting/);
    run.kill('SIGINT');
    const r = await run.result;
    expect(r.code, show(r)).toBe(3);
    expect(r.stderr).toMatch(/interrupting the turn/);
    expect(r.stderr).toMatch(/■ turn 1 ended: aborted/);
  });

  it("agents ls lists the worker's agents; run --agent starts a session on one and refuses others", async () => {
    const queue = stack.env.DH_TASK_QUEUE as string;
    const [listed, table, elsewhere, unknown] = await Promise.all([
      dh(['agents', 'ls', '--json'], stack.env),
      dh(['agents', 'ls'], stack.env),
      dh(['agents', 'ls', '--task-queue', 'nobody-serves-this'], stack.env),
      dh(['run', '--agent', 'nobody', 'agent-task: hello'], stack.env),
    ]);
    expect(listed.code, show(listed)).toBe(0);
    const agents = JSON.parse(listed.stdout) as ListedAgent[];
    expect(agents).toEqual([
      expect.objectContaining({ taskQueue: queue, name: 'default', default: true, model: TEST_MODEL, workers: 1 }),
    ]);
    expect(agents[0]?.tools).toContain('write_file');
    expect(table.code, show(table)).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(
      /^TASK QUEUE\s+AGENT\s+VERSION\s+DEFAULT\s+MODEL\s+TOOLS\s+WORKERS\s+LAST SEEN$/,
    );
    expect(table.stdout).toMatch(new RegExp(`\\bdefault\\s+${agents[0]?.version}\\s+yes\\s+${TEST_MODEL}\\s`));
    expect(elsewhere.code, show(elsewhere)).toBe(0);
    expect(elsewhere.stdout).toMatch(
      /^no live worker on task queue "nobody-serves-this" has published its agents .*dh worker --agents \.\/agents\.ts\n$/,
    );
    // Refused before anything is sent: no session (the ls test below counts them).
    expect(unknown.code, show(unknown)).toBe(2);
    expect(unknown.stderr).toBe(
      `dh: no live worker on task queue "${queue}" serves the agent "nobody"; they serve default (dh agents ls)\n`,
    );

    const run = await dh(['run', '--agent', 'default', 'agent-task: hello'], stack.env);
    expect(run.code, show(run)).toBe(0);
    const sessionId = /dh: session (\S+) /.exec(run.stderr)?.[1] as string;
    sessions.push(sessionId);
    const other = await dh(['run', '--agent', 'reviewer', '--session', sessionId, 'agent-task: more'], stack.env);
    expect(other.code, show(other)).toBe(2);
    expect(other.stderr).toMatch(/runs the agent "default", and a session keeps the agent it started with/);
    const store = SqliteSessionStore.open(join(stack.home, 'sessions.db'));
    try {
      expect((await store.read(sessionId))[0]).toMatchObject({ type: 'session/start', agent: { name: 'default' } });
    } finally {
      await store.close();
    }
  });

  it("set merges overrides over those in force, says when nothing changed, prints the worker's refusal", async () => {
    const sessionId = sessions.at(-1) as string;
    const set = await dh(
      ['set', sessionId, '--temperature', '0.5', '--system-append', 'Answer in one line.'],
      stack.env,
    );
    expect(set.code, show(set)).toBe(0);
    expect(set.stdout).toBe(
      `set: the overrides of ${sessionId} in force from its next step:\n` +
        '  temperature    0.5\n  system append  "Answer in one line."\n',
    );
    const [again, refused, nothing] = await Promise.all([
      dh(['set', sessionId, '--temperature', '0.5', '--json'], stack.env),
      dh(['set', sessionId, '--tools', 'no_such_tool'], stack.env),
      dh(['set', sessionId], stack.env),
    ]);
    expect(again.code, show(again)).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({
      sessionId,
      changed: false,
      overrides: { temperature: 0.5, systemAppend: 'Answer in one line.' },
    });
    expect(refused.code, show(refused)).toBe(1);
    expect(refused.stderr).toMatch(/^dh: the agent "default" has no tool "no_such_tool"; its tools are \S/);
    expect(nothing.code, show(nothing)).toBe(2);

    // The next step's request has them.
    const next = await dh(['run', '--session', sessionId, 'agent-task: again'], stack.env);
    expect(next.code, show(next)).toBe(0);
    const sent = provider.requests().findLast((q) => q.body.includes('agent-task: again'));
    const body = JSON.parse(sent?.body ?? '{}') as { temperature?: number; messages?: unknown[] };
    expect(body.temperature).toBe(0.5);
    expect(JSON.stringify(body.messages?.[0])).toContain('Answer in one line.');
    const store = SqliteSessionStore.open(join(stack.home, 'sessions.db'));
    try {
      const logged = (await store.read(sessionId)).filter((e) => e.type === 'agent/overrides');
      expect(logged).toEqual([
        expect.objectContaining({
          source: 'cli',
          overrides: { temperature: 0.5, systemAppend: 'Answer in one line.' },
        }),
      ]);
    } finally {
      await store.close();
    }
  });

  it('ls lists the sessions with their status from Temporal; close completes one', async () => {
    const first = sessions[0] as string;
    const closed = await dh(['close', first, '--reason', 'done with it'], stack.env);
    expect(closed.code, show(closed)).toBe(0);
    let rows: { sessionId: string; status: string; head: number }[] = [];
    for (let attempt = 0; attempt < 10; attempt++) {
      const r = await dh(['ls', '--json'], stack.env);
      expect(r.code, show(r)).toBe(0);
      rows = JSON.parse(r.stdout) as typeof rows;
      if (rows.find((row) => row.sessionId === first)?.status === 'closed') break;
    }
    expect(rows.map((row) => row.sessionId).sort()).toEqual([...sessions].sort());
    for (const row of rows) {
      expect(row.head).toBeGreaterThan(0);
      expect(row.sessionId === first ? ['closed'] : ['idle', 'running']).toContain(row.status);
    }
    const [table, again, status] = await Promise.all([
      dh(['ls'], stack.env),
      dh(['run', 'more work', '--session', first], stack.env),
      dh(['status', '--json'], stack.env),
    ]);
    // On an external cluster, `worker` says whether some worker polls the task queue.
    expect(JSON.parse(status.stdout)).toMatchObject({ temporal: 'external', worker: 'running' });
    expect(table.code, show(table)).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^SESSION\s+STATUS\s+EVENTS\s+CREATED/);
    expect(again.code, show(again)).toBe(4);
    expect(again.stderr).toMatch(/^dh: session "\S+" is closed \(completed\); reopen it with `dh resume \S+`\n$/);
    // A bad TLS setting is a configuration error, not "statuses unknown".
    const badTls = await dh(['ls'], { ...stack.env, TEMPORAL_TLS_CA: '/nonexistent/ca.pem' });
    expect(badTls.code, show(badTls)).toBe(1);
    expect(badTls.stderr).toMatch(/TEMPORAL_TLS_CA/);
  });

  it('usage errors exit 2; unknown sessions exit 4', async () => {
    const [noTask, badId, unknown] = await Promise.all([
      dh(['run'], stack.env),
      dh(['steer', 'bad/id', 'x'], stack.env),
      dh(['steer', 'no-such-session', 'hello'], stack.env),
    ]);
    expect(noTask.code, show(noTask)).toBe(2);
    expect(badId.code, show(badId)).toBe(2);
    expect(badId.stderr).toMatch(/^dh: invalid session id "bad\/id"/);
    expect(unknown.code, show(unknown)).toBe(4);
    expect(unknown.stderr).toBe('dh: session "no-such-session" does not exist (or is not running)\n');
  });
});

describe('configuration is checked before anything starts', () => {
  it('a real provider without its key is one line naming the variable and `dh demo` (exit 1)', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const home = mkdtempSync(join(tmpdir(), 'dh-live-nokey-'));
    try {
      const env = cleanEnv({ DH_HOME: home, DH_PROVIDER: 'deepseek' });
      const [worker, run] = await Promise.all([dh(['worker'], env), dh(['run', 'hello'], env)]);
      for (const r of [worker, run]) {
        expect(r.code, show(r)).toBe(1);
        expect(r.stderr).toBe(
          'dh: no API key for provider "deepseek": set DEEPSEEK_API_KEY (or try `dh demo`, which runs offline)\n',
        );
      }
      // Nothing was started for the embedded stack.
      expect(existsSync(join(home, 'stack.json'))).toBe(false);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('options are checked before anything connects', () => {
  it('dh approve --remember takes tool or call only (exit 2, no server needed)', async () => {
    const forever = await dh(['approve', 's', 'x', '--remember', 'forever'], cleanEnv({}));
    expect(forever.code, show(forever)).toBe(2);
    expect(forever.stderr).toMatch(/--remember <what>' argument 'forever' is invalid\. Allowed choices are tool, call/);
  });
});

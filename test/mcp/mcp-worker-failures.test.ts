// MCP failures as a user meets them, through `dh worker` child processes and the scripted provider: a worker
// killed mid-call of an MCP tool (a non-idempotent call is answered "outcome unknown" and not run again; an
// idempotent one runs again), approval lists naming MCP tools and servers, `dh mcp ls` with a broken server,
// and a worker that refuses to start over a broken server or a bad mcp.json.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalShortId } from '../../src/core/approval-short-id.js';
import { TOOL_OUTCOME_UNKNOWN, type EventOf, type SessionEvent } from '../../src/core/index.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { dh, sessionIdOf, show, spawnDh, startDhWorker, testStackEnv, TEST_MODEL } from '../cli/live-harness.js';
import type { DhProcess, TestStackEnv } from '../cli/live-harness.js';
import { answerReply as answer, callTap, toolCallReply as call, type CallTap } from '../helpers/mcp-call-tap.js';
import { everythingStdio } from '../helpers/mcp-test-servers.js';
import { waitForLog } from '../helpers/scenario-runtime.js';

const RUN_MS = 180_000;
const LONG = 'trigger-long-running-operation';
const BROKEN = 'dh-test-no-such-mcp-server';

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) =>
  events.filter((e): e is EventOf<T> => e.type === type);

describe('MCP failures through `dh worker`', () => {
  let dir: string;
  let provider: ScriptedProvider;
  let stack: TestStackEnv;
  let store: SqliteSessionStore;
  let worker: DhProcess | undefined;
  let tap: CallTap;
  /** The pids of the server processes that received a call of `name`. */
  const calls = (name: string): number[] =>
    tap
      .calls()
      .filter((c) => c.name === name)
      .map((c) => c.pid);
  const everything = (extra: Record<string, unknown> = {}) => tap.everything(extra);
  const writeMcpJson = (servers: Record<string, unknown>, file = join(stack.home, 'mcp.json')) => {
    writeFileSync(file, JSON.stringify({ mcpServers: servers }, null, 2));
    return file;
  };
  const restart = async (env: NodeJS.ProcessEnv = {}) => {
    await worker?.stop();
    worker = await startDhWorker({ ...stack.env, ...env });
  };
  const until = (id: string, predicate: (events: readonly SessionEvent[]) => boolean, what: string) =>
    waitForLog(store, id, predicate, what, 120_000);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-mcp-worker-failures-'));
    tap = callTap(dir);
    provider = await startScriptedProvider({
      script: {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [
          call('crash-task', 'k1', `mcp__everything__${LONG}`, { duration: 600, steps: 600 }),
          answer('crash-task', 'the outcome is unknown'),
          call('rerun-task', 'k2', `mcp__everything__${LONG}`, { duration: 8, steps: 8 }),
          answer('rerun-task', 'it ran again'),
          call('deny-task', 'd1', 'mcp__everything__echo', { message: 'never' }),
          answer('deny-task', 'denied'),
          call('ask-task', 'a1', 'mcp__everything__get-sum', { a: 2, b: 3 }),
          answer('ask-task', 'summed'),
        ],
      },
    });
    // A configured context window: the scripted provider reports none, and the warning would be one more
    // stderr line next to a refusal.
    stack = testStackEnv(provider.url, { DH_CONTEXT_WINDOW: '128000' });
    store = SqliteSessionStore.open(join(stack.home, 'sessions.db'));
  }, 60_000);

  afterAll(async () => {
    await worker?.stop();
    await store?.close();
    await provider?.close();
    stack?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Starts the call, SIGKILLs the worker's process group (its servers too) once the server has it, starts another. */
  const crashMidCall = async (task: string) => {
    const run = spawnDh(['run', task], stack.env);
    const id = await sessionIdOf(run);
    await until(id, (events) => ofType(events, 'tool/start').length > 0, 'the tool/start');
    const deadline = Date.now() + 60_000;
    while (calls(LONG).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(calls(LONG)).toHaveLength(1);
    worker?.kill('SIGKILL');
    await worker?.result;
    worker = await startDhWorker(stack.env);
    const r = await run.result;
    expect(r.code, show(r)).toBe(0);
    return { id, events: await store.read(id) };
  };

  it(
    'a worker killed mid-call of a non-idempotent MCP tool: the outcome is unknown, the call is not repeated',
    async () => {
      writeMcpJson({ everything: everything() });
      await restart();
      const { events } = await crashMidCall('crash-task: run the long operation');
      expect(ofType(events, 'tool/start').map((e) => e.callId)).toEqual(['k1']);
      expect(ofType(events, 'tool/result').map((e) => [e.callId, e.status, e.output])).toEqual([
        ['k1', 'interrupted', TOOL_OUTCOME_UNKNOWN],
      ]);
      // The model read that and answered; the server only ever got the first call.
      expect(ofType(events, 'turn/end').map((e) => e.reason)).toEqual(['completed']);
      expect(provider.requests().filter((q) => q.body.includes(TOOL_OUTCOME_UNKNOWN))).toHaveLength(1);
      expect(calls(LONG)).toHaveLength(1);
    },
    RUN_MS,
  );

  it(
    'the same crash with the tool configured idempotent: the call runs again and completes',
    async () => {
      writeMcpJson({ everything: everything({ tools: { [LONG]: { idempotent: true } } }) });
      await restart();
      tap.reset();
      const { events } = await crashMidCall('rerun-task: run the long operation');
      expect(ofType(events, 'tool/start').map((e) => e.callId)).toEqual(['k2']);
      expect(ofType(events, 'tool/result').map((e) => [e.callId, e.status, e.output])).toEqual([
        ['k2', 'ok', 'Long running operation completed. Duration: 8 seconds, Steps: 8.'],
      ]);
      // Two server processes got the call: the killed worker's and the new one's.
      const pids = calls(LONG);
      expect(pids).toHaveLength(2);
      expect(pids[0]).not.toBe(pids[1]);
    },
    RUN_MS,
  );

  it(
    'DH_APPROVAL_DENY=mcp__everything denies its tools; the server never runs them',
    async () => {
      writeMcpJson({ everything: everything() });
      await restart({ DH_APPROVAL_DENY: 'mcp__everything' });
      tap.reset();
      const r = await dh(['run', 'deny-task: echo it'], stack.env, RUN_MS);
      expect(r.code, show(r)).toBe(0);
      const id = /dh: session (\S+) /.exec(r.stderr)?.[1] as string;
      const events = await store.read(id);
      expect(ofType(events, 'tool/start')).toEqual([]);
      expect(ofType(events, 'tool/result').map((e) => [e.callId, e.status, e.output])).toEqual([
        ['d1', 'error', 'The call was denied: approval-policy: the tool mcp__everything__echo is not allowed'],
      ]);
      expect(calls('echo')).toEqual([]);
    },
    RUN_MS,
  );

  it(
    'DH_APPROVAL_ASK=mcp__everything__get-sum waits for `dh approve`, then runs the call',
    async () => {
      await restart({ DH_APPROVAL_ASK: 'mcp__everything__get-sum' });
      const run = spawnDh(['run', 'ask-task: add two and three'], stack.env);
      const id = await sessionIdOf(run);
      await until(id, (events) => ofType(events, 'approval/request').length > 0, 'the approval request');
      // The user sees the short id and approves with it, as the hint line says.
      const shortId = approvalShortId('a1');
      await run.waitFor(new RegExp(`mcp__everything__get-sum needs approval \\[${shortId}\\]`));
      expect(calls('get-sum')).toEqual([]);
      const approved = await dh(['approve', id, shortId], stack.env);
      expect(approved.code, show(approved)).toBe(0);
      const r = await run.result;
      expect(r.code, show(r)).toBe(0);
      const events = await store.read(id);
      expect(ofType(events, 'approval/decision').map((e) => [e.callId, e.decision])).toEqual([['a1', 'approve']]);
      expect(ofType(events, 'tool/result').map((e) => [e.callId, e.status, e.output])).toEqual([
        ['a1', 'ok', 'The sum of 2 and 3 is 5.'],
      ]);
      expect(calls('get-sum')).toHaveLength(1);
    },
    RUN_MS,
  );

  it(
    'dh mcp ls: a working server with its tools, a broken one FAILED (exit 1); none configured (exit 0)',
    async () => {
      await worker?.stop();
      worker = undefined;
      const file = writeMcpJson({ everything: everythingStdio(), broken: { command: BROKEN } }, join(dir, 'two.json'));
      const env = { ...stack.env, DH_MCP_CONFIG: file };
      const [text, json] = await Promise.all([dh(['mcp', 'ls'], env), dh(['mcp', 'ls', '--json'], env)]);
      expect(text.code, show(text)).toBe(1);
      expect(text.stdout).toMatch(/^ {2}everything \(stdio\): \d+ tools$/m);
      expect(text.stdout).toMatch(/^ {4}mcp__everything__echo$/m);
      expect(text.stdout).toMatch(new RegExp(`^ {2}broken \\(stdio\\): FAILED: .*${BROKEN}`, 'm'));
      expect(json.code, show(json)).toBe(1);
      const listed = JSON.parse(json.stdout) as { file: string; servers: { name: string; state: string }[] };
      expect(listed.file).toBe(file);
      expect(listed.servers.map((s) => [s.name, s.state])).toEqual([
        ['broken', 'failed'],
        ['everything', 'ready'],
      ]);
      expect(listed.servers[1]).toMatchObject({ tools: expect.arrayContaining(['mcp__everything__get-sum']) });

      const empty = mkdtempSync(join(tmpdir(), 'dh-mcp-none-'));
      try {
        const none = await dh(['mcp', 'ls'], { ...stack.env, DH_HOME: empty });
        expect(none.code, show(none)).toBe(0);
        expect(none.stdout).toBe(`no MCP servers configured (${join(empty, 'mcp.json')} does not exist)\n`);
      } finally {
        rmSync(empty, { recursive: true, force: true });
      }

      // The worker refuses to start over the broken server, in one line that names it.
      const refused = await dh(['worker'], env);
      expect(refused.code, show(refused)).toBe(1);
      expect(refused.stderr, show(refused)).toMatch(
        new RegExp(
          `^dh: MCP server from ${file} could not start: the MCP server "broken" could not be started: .*${BROKEN}.*\\n$`,
        ),
      );
    },
    RUN_MS,
  );

  it(
    'a bad mcp.json: `dh worker` exits 1 naming the file and the path of the problem',
    async () => {
      const home = join(dir, 'bad-home');
      mkdirSync(home);
      const file = writeMcpJson({ everything: { command: 'node', args: 'server.js' } }, join(home, 'mcp.json'));
      const refused = await dh(['worker'], { ...stack.env, DH_HOME: home });
      expect(refused.code, show(refused)).toBe(1);
      expect(refused.stderr).toBe(
        `dh: invalid MCP configuration in ${file}: mcpServers.everything.args: expected array\n`,
      );
      // A JSON syntax error (a trailing comma): one line naming the file, the line and the column.
      writeFileSync(file, '{\n  "mcpServers": {\n    "everything": { "command": "node", }\n  }\n}\n');
      for (const args of [['worker'], ['mcp', 'ls']]) {
        const syntax = await dh(args, { ...stack.env, DH_HOME: home });
        expect(syntax.code, show(syntax)).toBe(1);
        expect(syntax.stderr, show(syntax)).toMatch(
          new RegExp(`^dh: invalid MCP configuration in ${file}: not valid JSON: [^\n]* at line 3, column 40\n$`),
        );
      }
    },
    RUN_MS,
  );
});

// MCP as a user runs it: `dh worker` child processes with an mcp.json in their DH_HOME, the scripted model
// provider, and `dh run` / `dh audit`. One session lives across worker restarts: the model calls an MCP
// tool and the audit passes; a restart with the same servers records no new header and keeps the prefix;
// a restart that adds a server records exactly one `change` header, and another restart none. A server's
// environment holds none of the worker's variables, only what mcp.json names.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventOf, SessionEvent } from '../../src/core/index.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { KEY_VAR, dh, show, startDhWorker, testStackEnv, TEST_MODEL } from '../cli/live-harness.js';
import type { DhProcess, DhResult, TestStackEnv } from '../cli/live-harness.js';
import { answerReply as answer, callTap, toolCallReply as call, type CallTap } from '../helpers/mcp-call-tap.js';
import { filesystemStdio } from '../helpers/mcp-test-servers.js';

const KEY = 'sk-live-probe-5b1e9c';
const PROBE = 's3cret-value';
const RUN_MS = 120_000;

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) =>
  events.filter((e): e is EventOf<T> => e.type === type);

describe('MCP servers of `dh worker` processes, one session across restarts', () => {
  let dir: string;
  let provider: ScriptedProvider;
  let stack: TestStackEnv;
  let worker: DhProcess | undefined;
  let sessionId: string;
  let tap: CallTap;
  const calls = () => tap.calls();
  const everything = (extra: Record<string, unknown> = {}) => tap.everything(extra);
  const writeMcpJson = (servers: Record<string, unknown>) =>
    writeFileSync(join(stack.home, 'mcp.json'), JSON.stringify({ mcpServers: servers }, null, 2));
  const restart = async () => {
    await worker?.stop();
    worker = await startDhWorker(stack.env);
  };
  const run = async (args: string[]): Promise<DhResult & { sessionId: string }> => {
    const r = await dh(['run', ...args], stack.env, RUN_MS);
    expect(r.code, show(r)).toBe(0);
    return { ...r, sessionId: /dh: session (\S+) /.exec(r.stderr)?.[1] as string };
  };
  const logOf = async (id: string): Promise<SessionEvent[]> => {
    const store = SqliteSessionStore.open(join(stack.home, 'sessions.db'));
    try {
      return await store.read(id);
    } finally {
      await store.close();
    }
  };
  /** Chat-completion bodies the provider received for the session whose task contains `task`. */
  const bodies = (task: string) =>
    provider
      .requests()
      .filter((q) => q.path.endsWith('/chat/completions') && q.body.includes(task))
      .map((q) => JSON.parse(q.body) as { messages: unknown[]; tools?: unknown[] });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-mcp-worker-'));
    tap = callTap(dir);
    provider = await startScriptedProvider({
      script: {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [
          call('first-task', 'e1', 'mcp__everything__echo', { message: 'hello from dh run' }),
          answer('first-task', 'echoed once'),
          call('second-task', 'e2', 'mcp__everything__echo', { message: 'after a restart' }),
          answer('second-task', 'echoed again'),
          call('third-task', 'f1', 'mcp__fs__list_allowed_directories', {}),
          answer('third-task', 'listed'),
          answer('fourth-task', 'nothing new'),
          call('env-task', 'v1', 'mcp__everything__get-env', {}),
          answer('env-task', 'looked'),
          call('token-task', 'v2', 'mcp__everything__get-env', {}),
          answer('token-task', 'looked again'),
          call('progress-task', 'p1', 'mcp__everything__trigger-long-running-operation', { duration: 3, steps: 3 }),
          answer('progress-task', 'waited'),
        ],
      },
    });
    // The worker holds a provider key and another secret; neither may reach a server.
    stack = testStackEnv(provider.url, { [KEY_VAR]: KEY, DH_SECRET_PROBE: PROBE });
    writeMcpJson({ everything: everything() });
    worker = await startDhWorker(stack.env);
  }, 180_000);

  afterAll(async () => {
    await worker?.stop();
    await provider?.close();
    stack?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('dh run: the model calls mcp__everything__echo, the result is logged, dh audit passes', async () => {
    expect(worker?.stderr()).toMatch(/MCP servers from \S+mcp\.json: everything \(\d+ tools\)/);
    const r = await run(['first-task: echo something']);
    sessionId = r.sessionId;
    expect(r.stdout).toContain('echoed once');
    expect(r.stderr).toMatch(/← mcp__everything__echo ok/);
    const events = await logOf(sessionId);
    expect(ofType(events, 'tool/result').map((e) => [e.callId, e.name, e.status, e.output])).toEqual([
      ['e1', 'mcp__everything__echo', 'ok', 'Echo: hello from dh run'],
    ]);
    expect(calls().map((c) => c.name)).toEqual(['echo']);
    const audit = await dh(['audit', sessionId], stack.env, RUN_MS);
    expect(audit.code, show(audit)).toBe(0);
  }, 180_000);

  it("the server's environment has neither the provider key nor another worker variable", async () => {
    const r = await run(['env-task: show the environment']);
    const [result] = ofType(await logOf(r.sessionId), 'tool/result');
    expect(result?.status).toBe('ok');
    const output = result?.output ?? '';
    expect(output).not.toContain(KEY);
    expect(output).not.toContain(PROBE);
    // Only the SDK's safe defaults (PATH, HOME, ...): nothing of dh's, Temporal's or the provider's.
    const env = JSON.parse(output) as Record<string, string>;
    expect(Object.keys(env).filter((k) => !Object.hasOwn(getDefaultEnvironment(), k))).toEqual([]);
  }, 180_000);

  it('a restart with the same servers records no new header; the next turn keeps the prefix', async () => {
    await restart();
    const r = await run(['--session', sessionId, 'second-task: echo again']);
    expect(r.stdout).toContain('echoed again');
    const events = await logOf(sessionId);
    expect(ofType(events, 'request/header').map((e) => [e.reason, e.turn, e.step])).toEqual([['initial', 1, 1]]);
    expect(ofType(events, 'tool/result').map((e) => [e.callId, e.status, e.output])).toEqual([
      ['e1', 'ok', 'Echo: hello from dh run'],
      ['e2', 'ok', 'Echo: after a restart'],
    ]);
    // Another server process answered, so the restart really restarted the servers.
    const echoes = calls().filter((c) => c.name === 'echo');
    expect(echoes).toHaveLength(2);
    expect(echoes[0]?.pid).not.toBe(echoes[1]?.pid);
    // Turn 2's first request extends turn 1's last one: same tools, its messages as a prefix.
    const all = bodies('first-task');
    const last = all.filter((b) => !JSON.stringify(b.messages).includes('second-task')).at(-1);
    const next = all.find((b) => JSON.stringify(b.messages).includes('second-task'));
    expect(last && next).toBeTruthy();
    expect(next?.tools).toEqual(last?.tools);
    expect(next?.tools?.length).toBeGreaterThan(0);
    expect(next?.messages.slice(0, last?.messages.length)).toEqual(last?.messages);
    const audit = await dh(['audit', sessionId], stack.env, RUN_MS);
    expect(audit.code, show(audit)).toBe(0);
  }, 180_000);

  it('a server added between starts is exactly one `change` header; another restart adds none', async () => {
    const fs = filesystemStdio(['${workspace}']);
    writeMcpJson({ everything: everything(), fs: { ...fs, confine: 'workspace' } });
    await restart();
    const r = await run(['--session', sessionId, 'third-task: list what you may read']);
    expect(r.stdout).toContain('listed');
    const events = await logOf(sessionId);
    const headers = ofType(events, 'request/header');
    expect(headers.map((e) => [e.reason, e.turn, e.step])).toEqual([
      ['initial', 1, 1],
      ['change', 3, 1],
    ]);
    const names = (i: number) => (headers[i]?.header.tools ?? []).map((t) => t.name);
    expect(names(0).some((n) => n.startsWith('mcp__fs__'))).toBe(false);
    expect(names(1)).toEqual(expect.arrayContaining([...names(0), 'mcp__fs__list_allowed_directories']));
    // The confined server sees the session's workspace.
    const [listed] = ofType(events, 'tool/result').filter((e) => e.callId === 'f1');
    expect(listed?.status).toBe('ok');
    expect(listed?.output).toContain(join('workspaces', sessionId));

    await restart();
    await run(['--session', sessionId, 'fourth-task: nothing to do']);
    expect(ofType(await logOf(sessionId), 'request/header')).toHaveLength(2);
    const audit = await dh(['audit', sessionId], stack.env, RUN_MS);
    expect(audit.code, show(audit)).toBe(0);
  }, 300_000);

  it('an mcp.json env reference reaches the server, and its value is masked in what the server prints', async () => {
    writeMcpJson({ everything: everything({ env: { TOKEN: '${DH_SECRET_PROBE}' } }) });
    await restart();
    const r = await run(['token-task: show the environment again']);
    const [result] = ofType(await logOf(r.sessionId), 'tool/result');
    const env = JSON.parse(result?.output ?? '{}') as Record<string, string>;
    // What the file names reached the server (its value, masked on the way back), and nothing else of the
    // worker's: the variable itself stays behind.
    expect(env.TOKEN).toBe('[masked]');
    expect(env.DH_SECRET_PROBE).toBeUndefined();
    expect(result?.output).not.toContain(KEY);
    expect(result?.output).not.toContain(PROBE);
  }, 180_000);

  it("the server's progress notifications show in dh run while the call runs", async () => {
    const r = await run(['progress-task: wait for it']);
    // The server reports steps 1..3 of 3; the last may race the result (the SDK drops it), so two suffice.
    const lines = r.stderr
      .split('\n')
      .filter((line) => line.startsWith('… mcp__everything__trigger-long-running-operation'));
    expect(lines.slice(0, 2), show(r)).toEqual([
      '… mcp__everything__trigger-long-running-operation 1/3',
      '… mcp__everything__trigger-long-running-operation 2/3',
    ]);
    const log = JSON.stringify(await logOf(r.sessionId));
    expect(log).not.toContain('1/3');
  }, 180_000);
});

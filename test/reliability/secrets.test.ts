// The provider key never leaves the worker: a session whose worker holds a recognizable fake key (also in
// its process environment) runs shell calls that dump every environment they can see and meets a 401 whose
// message echoes the key; then the log (every stored byte), the workflow history (every event, payloads
// decoded), the tool outputs, the provider's recorded headers and bodies and every log line are scanned.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readdirSync, readFileSync, statSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import Database from 'better-sqlite3';
import type { WorkflowHandle } from '@temporalio/client';
import type { ToolDefinition } from '../../src/plugins/contracts.js';
import type { EventOf, SessionEvent } from '../../src/core/index.js';
import { followupSignal, stateQuery } from '../../src/shared/session-messages.js';
import { createShellTool } from '../../src/tools/shell.js';
import { historyToJSONObject } from '../helpers/scenario-runtime.js';
import {
  expectProviderSawTheLog,
  startHarness,
  TEST_KEY_ENV,
  waitForState,
  waitForTurnEnd,
  type Harness,
} from '../helpers/session-harness.js';

const KEY = 'sk-test-LEAKCHECK-5f3a9c';
/** A fragment that no digest or id can produce by chance (not hex). */
const FRAGMENT = 'LEAKCHECK';
const KEY_VARIABLES = ['DEEPSEEK_API_KEY', 'OPENAI_API_KEY', TEST_KEY_ENV] as const;
const SESSION = `secrets-${process.pid}-${Date.now()}`;

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T): EventOf<T>[] =>
  events.filter((e): e is EventOf<T> => e.type === type);

/** Whether `text` holds the key or its fragment, as is or inside a base64 string. */
function holdsKey(text: string): boolean {
  if (text.includes(KEY) || text.includes(FRAGMENT)) return true;
  if (text.length >= 12 && /^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) {
    const decoded = Buffer.from(text, 'base64').toString('latin1');
    return decoded.includes(KEY) || decoded.includes(FRAGMENT);
  }
  return false;
}

/** Every place in a JSON-like value that holds the key (strings are also base64-decoded). */
function findKey(value: unknown, path = '$'): string[] {
  if (typeof value === 'string') return holdsKey(value) ? [path] : [];
  if (value instanceof Uint8Array) return holdsKey(Buffer.from(value).toString('latin1')) ? [path] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => findKey(v, `${path}[${i}]`));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => [
      ...(holdsKey(k) ? [`${path} (key)`] : []),
      ...findKey(v, `${path}.${k}`),
    ]);
  }
  return [];
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Captures every console call and every write to stdout/stderr (what the worker and the SDK log). */
function captureOutput(): { lines: () => string[]; restore: () => void } {
  const spies = [
    ...(['log', 'info', 'warn', 'error', 'debug', 'trace'] as const).map((method) => vi.spyOn(console, method)),
    vi.spyOn(process.stdout, 'write'),
    vi.spyOn(process.stderr, 'write'),
  ];
  const render = (arg: unknown): string =>
    typeof arg === 'string'
      ? arg
      : arg instanceof Uint8Array
        ? Buffer.from(arg).toString('utf8')
        : inspect(arg, { depth: 20 });
  return {
    lines: () => spies.flatMap((spy) => spy.mock.calls.map((args: unknown[]) => args.map(render).join(' '))),
    restore: () => spies.forEach((spy) => spy.mockRestore()),
  };
}

describe('the provider key appears nowhere', () => {
  let h: Harness;
  let handle: WorkflowHandle;
  let output: ReturnType<typeof captureOutput>;
  const savedEnv = new Map(KEY_VARIABLES.map((name) => [name, process.env[name]]));

  // The sandboxed shell (bwrap: required, so a host without it fails here with the install command), and
  // the same tool unsandboxed under another name: the environment allow-list alone must drop the key from
  // the command's own environment. (Unsandboxed, a command could still read the worker's
  // /proc/<pid>/environ as the same user — one reason unsandboxed shell calls ask for approval — so
  // host_shell is not asked to.)
  const shell = createShellTool({ sandbox: 'bwrap' });
  const unsandboxed = createShellTool({ sandbox: 'none' });
  const hostShell: ToolDefinition = { ...unsandboxed, schema: { ...unsandboxed.schema, name: 'host_shell' } };
  const ownEnvironment =
    `env; echo '--- self'; cat /proc/self/environ | tr '\\0' '\\n'; echo; ` +
    `echo "vars=[$DEEPSEEK_API_KEY][$OPENAI_API_KEY][$${TEST_KEY_ENV}]"`;
  // In the sandbox's own pid namespace every process is the sandbox's (bwrap and the shell).
  const everyEnvironment = `${ownEnvironment}; for f in /proc/[0-9]*/environ; do echo "--- $f"; cat "$f" | tr '\\0' '\\n'; echo; done`;

  beforeAll(async () => {
    // The worker runs in this process: its environment holds the key under every name a worker reads.
    for (const name of KEY_VARIABLES) process.env[name] = KEY;
    output = captureOutput();
    h = await startHarness({
      apiKey: KEY,
      tools: [shell, hostShell],
      script: {
        replies: [
          {
            toolCalls: [
              { id: 'sh-env', name: 'shell', arguments: { command: 'env' } },
              { id: 'sh-environ', name: 'shell', arguments: { command: "cat /proc/self/environ | tr '\\0' '\\n'" } },
              { id: 'sh-all', name: 'shell', arguments: { command: everyEnvironment } },
              { id: 'host-env', name: 'host_shell', arguments: { command: ownEnvironment } },
            ],
          },
          { text: 'Nothing secret in there.' },
          {
            // Real providers echo (part of) a wrong key in their 401 message: the classifier must redact it.
            fault: {
              kind: 'status',
              status: 401,
              message: `Incorrect API key provided: ${KEY}. You can find your API key at https://example.invalid/keys.`,
            },
          },
        ],
      },
    });
    handle = await h.start(SESSION);
    await handle.signal(followupSignal, { content: 'Show me your environment.' });
    await waitForTurnEnd(h.store, SESSION, 1);
    await handle.signal(followupSignal, { content: 'Once more.' });
    await waitForTurnEnd(h.store, SESSION, 2);
    await waitForState(handle, (s) => s.status === 'idle');
  });
  afterAll(async () => {
    output?.restore();
    for (const [name, value] of savedEnv) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await h?.stop();
    rmSync(join(tmpdir(), 'dh-workspaces', SESSION), { recursive: true, force: true });
  });

  it('the scanner finds the key where it is, also base64-encoded', () => {
    expect(findKey({ a: [`x ${KEY} y`] })).toEqual(['$.a[0]']);
    expect(findKey({ data: Buffer.from(`{"k":"${KEY}"}`).toString('base64') })).toEqual(['$.data']);
    expect(findKey({ b: Buffer.from(`..${FRAGMENT}..`) })).toEqual(['$.b']);
    expect(holdsKey(readFileSync(new URL(import.meta.url), 'utf8'))).toBe(true);
  });

  it('the session ran: the shell calls listed their environments, the 401 ended turn 2 as AUTH', async () => {
    const events = await h.store.read(SESSION);
    const results = ofType(events, 'tool/result');
    expect(results.map((r) => [r.callId, r.status])).toEqual([
      ['sh-env', 'ok'],
      ['sh-environ', 'ok'],
      ['sh-all', 'ok'],
      ['host-env', 'ok'],
    ]);
    for (const result of results) {
      expect(result.output).toContain('TERM=dumb'); // an environment was listed
      for (const name of KEY_VARIABLES) expect(result.output).not.toContain(`${name}=`);
    }
    expect(results.find((r) => r.callId === 'sh-all')?.output).toContain('vars=[][][]');
    expect(results.find((r) => r.callId === 'sh-all')?.output).toMatch(/--- \/proc\/1\/environ/);
    expect(results.find((r) => r.callId === 'host-env')?.output).toContain('vars=[][][]');
    expect(shell.sandbox).toBe('bwrap');
    const ends = ofType(events, 'turn/end');
    expect(ends.map((e) => [e.turn, e.reason, e.error?.code ?? null])).toEqual([
      [1, 'completed', null],
      [2, 'error', 'AUTH'],
    ]);
    // The provider's message came through, with the key redacted.
    expect(ends[1]?.error?.message).toContain('Incorrect API key provided: [REDACTED]');
    await expectProviderSawTheLog(h, [SESSION]);
  });

  it('the session log: no stored row and no byte of the store files holds the key', () => {
    const db = new Database(h.storePath, { readonly: true });
    try {
      const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as Array<{ name: string }>;
      expect(tables.length).toBeGreaterThan(0);
      let rows = 0;
      for (const { name } of tables) {
        for (const row of db.prepare(`SELECT * FROM "${name}"`).all()) {
          rows++;
          expect(findKey(row, `${name}`)).toEqual([]);
        }
      }
      expect(rows).toBeGreaterThan(20);
    } finally {
      db.close();
    }
    const files = [...filesUnder(h.dir), ...filesUnder(join(tmpdir(), 'dh-workspaces', SESSION))];
    expect(files.some((f) => f.endsWith('sessions.db'))).toBe(true);
    for (const file of files) expect(holdsKey(readFileSync(file).toString('latin1')), file).toBe(false);
  });

  it('the workflow history: no event, payload (decoded) or failure holds the key', async () => {
    const history = await handle.fetchHistory();
    const json = historyToJSONObject(history) as { events: unknown[] };
    expect(json.events.length).toBeGreaterThan(20);
    expect(findKey(json)).toEqual([]);
    // The activity payloads are in it: tool results went through the toolStep activity's input and result.
    expect(JSON.stringify(json)).toContain('"toolStep"');
    expect(findKey(await handle.query(stateQuery))).toEqual([]);
    expect(findKey(await handle.describe())).toEqual([]);
  });

  it("the provider's record: Authorization is redacted, no header or body holds the key", () => {
    const requests = h.provider.requests().filter((r) => r.path.endsWith('/chat/completions'));
    expect(requests).toHaveLength(3);
    for (const request of requests) {
      expect(request.headers.authorization).toBe('Bearer [redacted]');
      expect(findKey(request)).toEqual([]);
    }
  });

  it('the logs: no line the worker, the SDK or the test wrote holds the key', () => {
    const lines = output.lines();
    // The 401 was logged (by the SDK's activity-failure warning), so the logs were captured.
    expect(lines.some((line) => line.includes('AUTH') || line.includes('not authorized'))).toBe(true);
    expect(lines.filter((line) => holdsKey(line))).toEqual([]);
  });
});

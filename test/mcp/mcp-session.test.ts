// MCP tools in sessions on the real stack (Temporal, the worker's activities, SQLite, the scripted model)
// against the reference servers from npm: server-everything over stdio and over streamable HTTP, and
// server-filesystem confined to each session's workspace. The model calls MCP tools, results are logged,
// every request re-derives and the audit passes; an interrupt cancels a long call; a killed server is a
// readable result, and the next call starts it again.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditSession } from '../../src/audit/audit-session.js';
import type { EventOf, SessionEvent } from '../../src/core/index.js';
import { loadMcpConfig } from '../../src/mcp/mcp-config.js';
import { startMcpHub, type McpHub } from '../../src/mcp/mcp-hub.js';
import { mcpTools } from '../../src/mcp/mcp-tools.js';
import { followupSignal, interruptSignal } from '../../src/shared/session-messages.js';
import { AttachmentStore } from '../../src/stores/attachment-store.js';
import { everythingStdio, filesystemStdio, startEverythingHttp } from '../helpers/mcp-test-servers.js';
import { waitForLog } from '../helpers/scenario-runtime.js';
import { expectProviderSawTheLog, startHarness, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) =>
  events.filter((e): e is EventOf<T> => e.type === type);
/** Session a's file, as another session's model would name it. */
const A_FILE = join(tmpdir(), 'dh-workspaces', 'mcp-fs-a', 'mine.txt');
const call = (id: string, name: string, args: unknown) => ({
  toolCalls: [{ id, name, arguments: JSON.stringify(args) }],
});

describe('MCP tools in a session', () => {
  let dir: string;
  let hub: McpHub;
  let h: Harness;
  let http: Awaited<ReturnType<typeof startEverythingHttp>>;
  let attachments: AttachmentStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-mcp-session-'));
    http = await startEverythingHttp();
    const everything = everythingStdio();
    const fs = filesystemStdio(['${workspace}']);
    writeFileSync(
      join(dir, 'mcp.json'),
      JSON.stringify({
        mcpServers: {
          everything: { command: everything.command, args: everything.args },
          remote: { url: http.url },
          fs: { command: fs.command, args: fs.args, confine: 'workspace' },
        },
      }),
    );
    const config = await loadMcpConfig({ home: dir, env: {} });
    if (!config) throw new Error('no MCP configuration loaded');
    hub = await startMcpHub(config, { env: process.env, strict: true });
    attachments = new AttachmentStore(join(dir, 'attachments'));
    h = await startHarness({
      tools: mcpTools(hub, { attachments }),
      script: {
        cache: 'deepseek',
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'echo it' }, ...call('e1', 'mcp__everything__echo', { message: 'hello mcp' }) },
          { match: { lastUserContains: 'echo it' }, ...call('e2', 'mcp__remote__get-sum', { a: 2, b: 3 }) },
          { match: { lastUserContains: 'echo it' }, ...call('e3', 'mcp__everything__get-tiny-image', {}) },
          { match: { lastUserContains: 'echo it' }, text: 'echoed, summed and pictured' },
          { match: { lastUserContains: 'read mine' }, ...call('f1', 'mcp__fs__read_text_file', { path: 'mine.txt' }) },
          { match: { lastUserContains: 'read mine' }, text: 'read' },
          { match: { lastUserContains: 'read theirs' }, ...call('f2', 'mcp__fs__read_text_file', { path: A_FILE }) },
          { match: { lastUserContains: 'read theirs' }, text: 'tried' },
          {
            match: { lastUserContains: 'take long' },
            ...call('l1', 'mcp__everything__trigger-long-running-operation', { duration: 60, steps: 60 }),
          },
          {
            match: { lastUserContains: 'long then killed' },
            ...call('k1', 'mcp__everything__trigger-long-running-operation', { duration: 60, steps: 60 }),
          },
          { match: { lastUserContains: 'long then killed' }, text: 'the server died' },
          {
            match: { lastUserContains: 'after the kill' },
            ...call('k2', 'mcp__everything__echo', { message: 'back' }),
          },
          { match: { lastUserContains: 'after the kill' }, text: 'it is back' },
        ],
      },
    });
  }, 120_000);

  afterAll(async () => {
    await h?.stop();
    await hub?.close();
    await http?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists every server, namespaced and sorted, with resource tools where the server has resources', () => {
    const names = mcpTools(hub).map((t) => t.schema.name);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(
      expect.arrayContaining([
        'mcp__everything__echo',
        'mcp__everything__read_resource',
        'mcp__fs__read_text_file',
        'mcp__remote__get-sum',
      ]),
    );
    expect(hub.status.map((s) => [s.name, s.state, s.confined])).toEqual([
      ['everything', 'ready', false],
      ['fs', 'ready', true],
      ['remote', 'ready', false],
    ]);
  });

  it('the model calls MCP tools over stdio and HTTP; results are logged, requests re-derive, the audit passes', async () => {
    const handle = await h.start('mcp-echo');
    await handle.signal(followupSignal, { content: 'echo it' });
    const events = await waitForTurnEnd(h.store, 'mcp-echo', 1, 60_000);
    const results = ofType(events, 'tool/result');
    expect(results.map((r) => [r.name, r.status])).toEqual([
      ['mcp__everything__echo', 'ok'],
      ['mcp__remote__get-sum', 'ok'],
      ['mcp__everything__get-tiny-image', 'ok'],
    ]);
    expect(results[0]?.output).toContain('hello mcp');
    expect(results[1]?.output).toContain('5');
    // The image is kept as a content-addressed attachment and cited by its id.
    const id = /\[image (sha256:[0-9a-f]{64}) \(image\/png, (\d+) bytes\)\]/.exec(results[2]?.output ?? '');
    expect(id, results[2]?.output).not.toBeNull();
    const bytes = await attachments.get({ id: id?.[1] as string, mediaType: 'image/png', bytes: Number(id?.[2]) });
    expect(bytes.length).toBe(Number(id?.[2]));
    await expectProviderSawTheLog(h, ['mcp-echo']);
    const report = await auditSession({ store: h.store, sessionId: 'mcp-echo', profile: h.profile, client: h.client });
    expect(report.failures).toEqual([]);
  }, 90_000);

  it("a confined server sees only its session's workspace", async () => {
    const mine = join(tmpdir(), 'dh-workspaces', 'mcp-fs-a');
    mkdirSync(mine, { recursive: true });
    writeFileSync(A_FILE, 'only for session a');
    const theirs = join(tmpdir(), 'dh-workspaces', 'mcp-fs-b');
    mkdirSync(theirs, { recursive: true });
    writeFileSync(join(theirs, 'secret.txt'), 'only for session b');

    const a = await h.start('mcp-fs-a');
    await a.signal(followupSignal, { content: 'read mine' });
    const first = await waitForTurnEnd(h.store, 'mcp-fs-a', 1, 60_000);
    expect(ofType(first, 'tool/result')[0]).toMatchObject({ status: 'ok', output: 'only for session a' });

    // Session b's server is another process, rooted in b's workspace; a's path is outside it.
    const b = await h.start('mcp-fs-b');
    await b.signal(followupSignal, { content: 'read theirs' });
    const second = await waitForTurnEnd(h.store, 'mcp-fs-b', 1, 60_000);
    const [refused] = ofType(second, 'tool/result');
    expect(refused?.status).toBe('error');
    expect(refused?.output).not.toContain('only for session a');
  }, 90_000);

  it('an interrupt during a long call cancels it: the turn ends aborted within seconds', async () => {
    const handle = await h.start('mcp-long');
    await handle.signal(followupSignal, { content: 'take long' });
    await waitForLog(h.store, 'mcp-long', (events) => ofType(events, 'tool/start').length > 0, 'the call to start');
    const started = Date.now();
    await handle.signal(interruptSignal, { reason: 'enough' });
    const events = await waitForTurnEnd(h.store, 'mcp-long', 1, 60_000);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(ofType(events, 'turn/end').map((e) => e.reason)).toEqual(['aborted']);
    // The call has a result, so nothing dangles.
    expect(ofType(events, 'tool/result').map((r) => r.callId)).toEqual(['l1']);
  }, 90_000);

  it('a server killed mid-call is a result the model reads; the next call starts it again', async () => {
    const slot = hub.slots.find((s) => s.entry.name === 'everything');
    const handle = await h.start('mcp-kill');
    await handle.signal(followupSignal, { content: 'long then killed' });
    await waitForLog(h.store, 'mcp-kill', (events) => ofType(events, 'tool/start').length > 0, 'the call to start');
    const pid = slot?.pid();
    expect(pid).toBeGreaterThan(0);
    process.kill(pid as number, 'SIGKILL');
    const events = await waitForLog(
      h.store,
      'mcp-kill',
      (all) => ofType(all, 'tool/result').length > 0,
      'the result of the killed call',
      30_000,
    );
    expect(ofType(events, 'tool/result')[0]).toMatchObject({ status: 'error' });
    expect(ofType(events, 'tool/result')[0]?.output).toMatch(/MCP server "everything" failed/);
    await waitForTurnEnd(h.store, 'mcp-kill', 1, 60_000);
    await handle.signal(followupSignal, { content: 'after the kill' });
    const after = await waitForTurnEnd(h.store, 'mcp-kill', 2, 60_000);
    expect(ofType(after, 'tool/result').at(-1)).toMatchObject({
      status: 'ok',
      output: expect.stringContaining('back'),
    });
    expect(slot?.pid()).not.toBe(pid);
  }, 120_000);
});

// The offline operator commands as child processes over a SQLite store under a temp DH_HOME, on logs
// written through the core: log, show, replay, audit (clean and tampered), export/import.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRequest, SESSION_FORMAT_VERSION, Session, type SessionEvent } from '../../src/core/index.js';
import { BUILTIN_PROFILES } from '../../src/providers/provider-profiles.js';
import { toWireBody } from '../../src/providers/wire-body.js';
import { AttachmentStore } from '../../src/stores/attachment-store.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { standardLog, tamperToolResult } from '../audit/audited-log.js';
import { cleanEnv, describeRun, runDh, tempHome } from './operator-cli.js';

function parseLine(line: string): Record<string, unknown> {
  return JSON.parse(line) as Record<string, unknown>;
}

/** A 1x1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);

// Each command is a child process that loads the CLI through tsx: seconds each on a busy machine.
describe('operator commands offline', { timeout: 120_000 }, () => {
  const home = tempHome('dh-cli-offline-');
  const env = cleanEnv({ DH_HOME: home.home });
  const dbPath = join(home.home, 'sessions.db');
  let events: SessionEvent[];

  beforeAll(async () => {
    const store = SqliteSessionStore.open(dbPath);
    events = await standardLog('s-clean');
    for (const id of ['s-clean', 's-tampered']) {
      await store.create(id, { createdAt: 1 });
      await store.append(id, 0, id === 's-clean' ? events : await standardLog(id));
    }
    // A session whose queued message carries an image (its bytes in $DH_HOME/attachments).
    const ref = await new AttachmentStore(join(home.home, 'attachments')).put(PNG, 'image/png', { name: 'dot.png' });
    const pictured = new Session('s-image');
    pictured.append(
      { type: 'session/start', at: 1, sessionId: 's-image', formatVersion: SESSION_FORMAT_VERSION },
      {
        type: 'inbox/enqueue',
        at: 2,
        messageId: 'img-1',
        target: 'next-turn',
        wakeup: true,
        origin: 'followup',
        content: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'image', attachment: ref },
        ],
      },
    );
    await store.create('s-image', { createdAt: 1 });
    await store.append('s-image', 0, pictured.events);
    await store.close();
    tamperToolResult(dbPath, 's-tampered', true);
  });
  afterAll(() => home.cleanup());

  it('log prints one line per event, and the events as JSONL with --json (from a seq)', async () => {
    const [human, json] = await Promise.all([
      runDh(['log', 's-clean'], env),
      runDh(['log', 's-clean', '--json', '--from', '20'], env),
    ]);
    expect(human.code, describeRun(human)).toBe(0);
    const lines = human.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(events.length);
    expect(lines[0]).toMatch(/^\s+0 \S+ \S+ session\/start\s+session s-clean \(format v2\)$/);
    expect(human.stdout).toContain('request/sent       1.2 ');
    expect(human.stdout).toContain('tool/result        1.1 read_file call_1_1_0 ok: ');

    expect(json.code, describeRun(json)).toBe(0);
    const parsed = json.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as SessionEvent);
    expect(parsed).toEqual(events.slice(20));
  });

  it('show rolls up usage, and --step prints the exact wire body the model saw', async () => {
    const [summary, raw, pretty, missing, usage] = await Promise.all([
      runDh(['show', 's-clean'], env),
      runDh(['show', 's-clean', '--step', '2.1', '--json'], env),
      runDh(['show', 's-clean', '--step', '2.1'], env),
      runDh(['show', 's-clean', '--step', '7.1'], env),
      runDh(['show', 's-clean', '--step', 'two'], env),
    ]);
    expect(summary.code, describeRun(summary)).toBe(0);
    expect(summary.stdout).toContain('status: idle; turn 3 ended completed');
    expect(summary.stdout).toContain('turns: 3 (3 completed); steps: 4; requests sent: 4; tool calls: 1');
    expect(summary.stdout).toContain('tokens: 60 total = input 40 uncached + 0 cache read, output 20 + 0 reasoning');
    expect(summary.stdout).toContain('cache-read share of input: 0.0%');

    const sent = events.find((e) => e.type === 'request/sent' && e.turn === 2 && e.step === 1);
    if (sent?.type !== 'request/sent') throw new Error('no request/sent 2.1');
    const expected = await toWireBody(buildRequest('s-clean', events.slice(0, sent.seq)), BUILTIN_PROFILES.deepseek);
    expect(expected.digest).toBe(sent.digest);
    expect(raw.code, describeRun(raw)).toBe(0);
    expect(raw.stdout).toBe(`${expected.body}\n`);

    expect(pretty.code, describeRun(pretty)).toBe(0);
    expect(pretty.stdout).toContain(`digest ${sent.digest} matches the log`);
    expect(pretty.stdout).toContain('<context source="test">\nThe branch moved to main.\n</context>');

    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('sent no request at step 7.1 (steps with requests: 1.1, 1.2, 2.1, 3.1)');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('expected TURN.STEP');
  });

  it('replay re-derives every request offline and checks its digest', async () => {
    const [result, json, tampered] = await Promise.all([
      runDh(['replay', 's-clean'], env),
      runDh(['replay', 's-clean', '--json'], env),
      runDh(['replay', 's-tampered'], env),
    ]);
    expect(result.code, describeRun(result)).toBe(0);
    expect(result.stdout.match(/^step \d\.\d \(request\/sent at seq \d+\): .* matches the log$/gm)).toHaveLength(4);
    expect(result.stdout).toContain('[messages 0..4: as in the previous request]');
    expect(result.stdout).toContain('replayed 4 request(s) of session s-clean: 4 match the log');

    const rows = json.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { step: string; ok: boolean; digest: string; recordedDigest: string });
    expect(rows.map((r) => [r.step, r.ok])).toEqual([
      ['1.1', true],
      ['1.2', true],
      ['2.1', true],
      ['3.1', true],
    ]);

    expect(tampered.code).toBe(1);
    expect(tampered.stdout).toContain('step 1.2 (request/sent at seq 13): deepseek/deepseek-chat, 5 message(s), ');
    expect(tampered.stdout).toContain('DIGEST MISMATCH');
  });

  it('audit passes a clean log and fails (exit 1) on a tampered store row', async () => {
    const [clean, tampered, json, unknown] = await Promise.all([
      runDh(['audit', 's-clean'], env),
      runDh(['audit', 's-tampered'], env),
      runDh(['audit', 's-tampered', '--json', '--no-mirror'], env),
      runDh(['audit', 'nobody'], env),
    ]);
    expect(clean.code, describeRun(clean)).toBe(0);
    expect(clean.stdout).toMatch(/^1\.2\s+13\s+deepseek-chat\s+5\s+ok\s+extends\s+\d+ \/ 0/m);
    expect(clean.stdout).toContain('digests: 4/4 re-derive');
    expect(clean.stdout).toContain('prefix stability: 3/3 = 100%');
    expect(clean.stdout).toContain('AUDIT PASSED');

    expect(tampered.code, describeRun(tampered)).toBe(1);
    expect(tampered.stdout).toMatch(/^1\.1\s+7\s+deepseek-chat\s+3\s+ok\s/m);
    expect(tampered.stdout).toMatch(/^1\.2\s+13\s+deepseek-chat\s+5\s+MISMATCH\s/m);
    expect(tampered.stdout).toContain('AUDIT FAILED');
    expect(tampered.stdout).toContain('  - step 1.2: the re-derived request has digest');

    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout) as { ok: boolean; summary: { digests: { mismatched: string[] } } };
    expect(report.ok).toBe(false);
    expect(report.summary.digests.mismatched).toEqual(['1.2', '2.1', '3.1']);

    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('session "nobody" not found');
  });

  it('export → import --as round-trips the log, with its attachments, into another home', async () => {
    const out = join(home.home, 'exported.jsonl');
    const exported = await runDh(['export', 's-clean', '--out', out], env);
    expect(exported.code, describeRun(exported)).toBe(0);
    const imported = await runDh(['import', out, '--as', 's-copy'], env);
    expect(imported.code, describeRun(imported)).toBe(0);
    expect(imported.stdout).toBe('s-copy\n');
    const again = await runDh(['export', 's-copy'], env);
    // A header line, then one line per event with its chain digest (re-chained under the new id: seq 0 changed).
    const original = readFileSync(out, 'utf8').trimEnd().split('\n').map(parseLine);
    const copy = again.stdout.trimEnd().split('\n').map(parseLine);
    expect(copy).toHaveLength(original.length);
    expect(copy[0]).toMatchObject({
      format: 'dh-session-export',
      version: 2,
      sessionId: 's-copy',
      head: events.length,
    });
    const eventsOf = (lines: Array<Record<string, unknown>>) => lines.slice(1).map((line) => line.event);
    expect(eventsOf(copy)[0]).toEqual({ ...(eventsOf(original)[0] as object), sessionId: 's-copy' });
    expect(eventsOf(copy).slice(1)).toEqual(eventsOf(original).slice(1));
    const audit = await runDh(['audit', 's-copy'], env);
    expect(audit.code, describeRun(audit)).toBe(0);

    const twice = await runDh(['import', out, '--as', 's-copy'], env);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('session "s-copy" already exists');

    // Attachments travel in <out>.attachments/ and land in the importing home's attachment store.
    const pictureOut = join(home.home, 'image.jsonl');
    const withImage = await runDh(['export', 's-image', '--out', pictureOut], env);
    expect(withImage.code, describeRun(withImage)).toBe(0);
    expect(withImage.stderr).toContain(`1 attachment(s) into ${pictureOut}.attachments`);
    const other = tempHome('dh-cli-import-');
    try {
      const result = await runDh(['import', pictureOut], cleanEnv({ DH_HOME: other.home }));
      expect(result.code, describeRun(result)).toBe(0);
      const [event] = await (async () => {
        const store = SqliteSessionStore.open(join(other.home, 'sessions.db'));
        try {
          return await store.read('s-image', 1, 2);
        } finally {
          await store.close();
        }
      })();
      if (event?.type !== 'inbox/enqueue' || typeof event.content === 'string') throw new Error('no image event');
      const part = event.content[1];
      if (part?.type !== 'image') throw new Error('no image part');
      const bytes = await new AttachmentStore(join(other.home, 'attachments')).get(part.attachment);
      expect(Buffer.from(bytes).equals(PNG)).toBe(true);
    } finally {
      other.cleanup();
    }
  });

  it('import refuses a log that does not validate, naming the line and seq', async () => {
    // As bare events (export format 1, still imported): the core's validation is what refuses them here.
    const lines = readFileSync(join(home.home, 'exported.jsonl'), 'utf8')
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((line) => JSON.stringify(parseLine(line).event));
    const file = (name: string, content: string) => {
      const path = join(home.home, name);
      writeFileSync(path, content);
      return path;
    };
    // Drop the step/end of step 1.1 (seq 11) and renumber: line 12 (seq 11) starts a step while 1.1 is open.
    const edited = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const shifted = [...edited.slice(0, 11), ...edited.slice(12).map((e) => ({ ...e, seq: (e.seq as number) - 1 }))];
    const broken = file('broken.jsonl', `${shifted.map((e) => JSON.stringify(e)).join('\n')}\n`);
    const badType = file('bad-type.jsonl', `${lines[0]}\n${lines[1]?.replace('"inbox/enqueue"', '"inbox/queued"')}\n`);
    const notJsonFile = file('not-json.jsonl', `${lines[0]}\nnot json\n`);
    const [structure, schema, notJson] = await Promise.all([
      runDh(['import', broken, '--as', 's-broken'], env),
      runDh(['import', badType, '--as', 's-broken'], env),
      runDh(['import', notJsonFile, '--as', 's-broken'], env),
    ]);
    expect(structure.code).toBe(1);
    expect(structure.stderr).toContain(`${broken} line 12 (seq 11): step/start: step 1 is still open`);
    expect(schema.code).toBe(1);
    expect(schema.stderr).toContain(`${badType} line 2 (seq 1): event.type:`);
    expect(notJson.code).toBe(1);
    expect(notJson.stderr).toContain(`${notJsonFile} line 2: not JSON`);

    const list = await runDh(['log', 's-broken'], env);
    expect(list.code).toBe(1);
    expect(list.stderr).toContain('session "s-broken" not found');
  });
});

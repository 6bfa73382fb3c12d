// The audit over logs written through the core into a real SQLite store: clean logs pass, a rewritten
// row (body and digest column, so the load passes) fails on the first step whose request it changes.
import { afterEach, describe, expect, it } from 'vitest';
import { buildCompactionRequest, ErrorCode } from '../../src/core/index.js';
import { auditSession } from '../../src/audit/audit-session.js';
import { auditProfileFor, cacheModeFor } from '../../src/audit/audit-profile.js';
import type { DerivedRequest } from '../../src/audit/derive-sent-requests.js';
import { prefixVerdicts, summarizePrefix } from '../../src/audit/prefix-stability.js';
import { BUILTIN_PROFILES } from '../../src/providers/provider-profiles.js';
import { toWireBody } from '../../src/providers/wire-body.js';
import { LogDriver } from '../helpers/log-generator.js';
import {
  STANDARD_COMMANDS,
  standardLog,
  tamperToolResult,
  tempStore,
  withRequestSent,
  writeLog,
  type TempStore,
} from './audited-log.js';

const stores: TempStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.cleanup();
});
function open(): TempStore {
  const s = tempStore();
  stores.push(s);
  return s;
}

describe('auditSession', () => {
  it('passes a clean log: every digest re-derives, requests extend each other, the summary adds up', async () => {
    const { store } = open();
    await writeLog(store, 'clean', await standardLog('clean'));
    const report = await auditSession({ store, sessionId: 'clean' });
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.rows.map((r) => r.id)).toEqual(['1.1', '1.2', '2.1', '3.1']);
    expect(report.rows.every((r) => r.digestOk && r.derivedDigest === r.recordedDigest)).toBe(true);
    expect(report.rows.map((r) => r.profileSource)).toEqual(['builtin', 'builtin', 'builtin', 'builtin']);
    // One header epoch, no replaces: the first request has nothing to extend, the others all extend.
    expect(report.rows.map((r) => r.prefixExtends)).toEqual([null, true, true, true]);
    expect(report.summary.prefix).toEqual({ pairs: 3, extended: 3, ratio: 1, broken: [] });
    expect(report.summary).toMatchObject({
      turns: 3,
      steps: 4,
      log: { ok: true, problem: null },
      structure: { ok: true, problem: null },
      digests: { ok: 4, mismatched: [], underivable: [] },
      mirror: null,
    });
    // Reported cache reads are the LogDriver's zeros; expectations come from the DeepSeek simulation.
    expect(report.rows.every((r) => r.cacheMode === 'deepseek' && r.reportedCacheRead === 0)).toBe(true);
    expect(report.rows[0]?.expectedCacheRead).toBe(0);
    expect(report.rows.every((r) => (r.expectedCacheRead ?? -1) >= 0 && (r.promptTokens ?? 0) > 0)).toBe(true);
    const expected = report.rows.map((r) => r.expectedCacheRead ?? 0);
    expect(report.summary.cache.expected).toBe(expected.reduce((a, b) => a + b, 0));
  });

  it('fails on the first step whose request a consistently rewritten row changes', async () => {
    const { store, path } = open();
    await writeLog(store, 'tampered', await standardLog('tampered'));
    const seq = tamperToolResult(path, 'tampered', true);
    const report = await auditSession({ store, sessionId: 'tampered' });
    expect(report.ok).toBe(false);
    expect(report.summary.log.ok).toBe(true); // the row loads: the chain and re-derivation see it
    expect(report.summary.structure.ok).toBe(true);
    expect(report.rows.find((r) => r.id === '1.1')?.digestOk).toBe(true);
    expect(report.rows.find((r) => r.id === '1.2')?.digestOk).toBe(false);
    expect(report.summary.digests.mismatched[0]).toBe('1.2');
    expect(report.failures[0]).toMatch(
      new RegExp(`^chain: seq ${seq}: the stored chain digest sha256:[0-9a-f]{64} does not follow`),
    );
    expect(report.failures[1]).toMatch(
      /^step 1\.2: the re-derived request has digest sha256:[0-9a-f]{64}, the log recorded/,
    );
  });

  it('fails when a stored body no longer matches its digest column: the log does not load', async () => {
    const { store, path } = open();
    await writeLog(store, 'torn', await standardLog('torn'));
    const seq = tamperToolResult(path, 'torn', false);
    const report = await auditSession({ store, sessionId: 'torn' });
    expect(report.ok).toBe(false);
    expect(report.summary.log.ok).toBe(false);
    expect(report.summary.log.problem).toContain(`seq ${seq}`);
    expect(report.rows).toEqual([]);
  });

  it('refuses an unknown session as an error, not a finding', async () => {
    const { store } = open();
    await expect(auditSession({ store, sessionId: 'nobody' })).rejects.toMatchObject({
      code: ErrorCode.SessionNotFound,
    });
  });

  it('marks pairs across a surface replace as not comparable and still re-derives every digest', async () => {
    const { store } = open();
    const driver = new LogDriver('replaced').run([
      { kind: 'send', origin: 'followup', text: 'one' },
      { kind: 'step', toolCalls: 1, text: 'a', changeHeader: false, skipLastTool: false },
      { kind: 'step', toolCalls: 0, text: 'b', changeHeader: false, skipLastTool: false },
      { kind: 'end-turn' },
      { kind: 'prune', pick: 0 },
      { kind: 'send', origin: 'followup', text: 'two' },
      { kind: 'step', toolCalls: 0, text: 'c', changeHeader: false, skipLastTool: false },
      { kind: 'send', origin: 'steer', text: 'three' },
      { kind: 'step', toolCalls: 0, text: 'd', changeHeader: false, skipLastTool: false },
      { kind: 'end-turn' },
    ]);
    expect(driver.session.events.some((e) => e.type === 'surface/replace')).toBe(true);
    await writeLog(store, 'replaced', await withRequestSent('replaced', driver.session.events));
    const report = await auditSession({ store, sessionId: 'replaced' });
    expect(report.ok).toBe(true);
    expect(report.rows.map((r) => `${r.id}:${String(r.prefixExtends)}`)).toEqual([
      '1.1:null',
      '1.2:true',
      '2.1:null',
      '2.2:true',
    ]);
    expect(report.summary.prefix.ratio).toBe(1);
  });

  it('re-derives a compaction summary request and simulates it in its place', async () => {
    const { store } = open();
    const driver = new LogDriver('compacted').run(STANDARD_COMMANDS);
    driver.append({ type: 'compact/start', at: 50, compactionId: 'c1', trigger: 'manual' });
    const summaryRequest = buildCompactionRequest('compacted', driver.session.events, 512);
    const wire = await toWireBody(summaryRequest, BUILTIN_PROFILES.deepseek);
    driver.append(
      {
        type: 'compact/summary',
        at: 51,
        compactionId: 'c1',
        provider: 'deepseek',
        model: 'deepseek-chat',
        maxTokens: 512,
        range: { start: 0, end: 5 },
        tokensBefore: 100,
        tokensAfter: 20,
        usage: { inputUncached: 50, cacheRead: 0, output: 10, reasoning: 0 },
        requestDigest: wire.digest,
        requestBytes: wire.bytes,
      },
      {
        type: 'surface/replace',
        at: 51,
        replaceId: 'c1',
        range: { start: 0, end: 5 },
        messages: [{ role: 'user', content: 'Summary: a file was read; it says hello.' }],
      },
      { type: 'compact/end', at: 51, compactionId: 'c1', outcome: 'applied' },
    );
    driver.run([
      { kind: 'send', origin: 'followup', text: 'And now?' },
      { kind: 'step', toolCalls: 0, text: 'Nothing left.', changeHeader: false, skipLastTool: false },
      { kind: 'end-turn' },
    ]);
    await writeLog(store, 'compacted', await withRequestSent('compacted', driver.session.events));
    const report = await auditSession({ store, sessionId: 'compacted' });
    expect(report.failures).toEqual([]);
    expect(report.rows.map((r) => `${r.kind}:${r.id}:${String(r.prefixExtends)}`)).toEqual([
      'step:1.1:null',
      'step:1.2:true',
      'step:2.1:true',
      'step:3.1:true',
      'compaction:compact:c1:null',
      'step:4.1:null',
    ]);
    const compaction = report.rows[4];
    expect(compaction).toMatchObject({ digestOk: true, turn: 3, step: 1, reportedCacheRead: 0 });
    // The summary request repeats step 3.1's request plus one instruction: the simulated cache hits its prefix.
    expect(compaction?.expectedCacheRead).toBeGreaterThan(0);
  });

  it('derives a generic provider offline from the header alone', async () => {
    const { store } = open();
    const driver = new LogDriver('generic');
    driver.run([{ kind: 'send', origin: 'followup', text: 'hello' }]);
    driver.append(
      { type: 'turn/start', at: 2, turn: 1 },
      { type: 'inbox/claim', at: 2, turn: 1, step: 1, messageIds: ['m1'] },
      { type: 'step/start', at: 2, turn: 1, step: 1 },
      { type: 'user/message', at: 2, turn: 1, step: 1, messageId: 'm1', origin: 'followup', content: 'hello' },
      {
        type: 'request/header',
        at: 2,
        turn: 1,
        step: 1,
        reason: 'initial',
        header: { config: { provider: 'my-endpoint', model: 'local-llm', includeUsage: true }, system: 'Be brief.' },
      },
      { type: 'request/sent', at: 2, turn: 1, step: 1, digest: `sha256:${'0'.repeat(64)}`, bytes: 1 },
      {
        type: 'assistant/message',
        at: 3,
        turn: 1,
        step: 1,
        content: 'hi',
        toolCalls: [],
        finishReason: 'stop',
      },
      { type: 'step/end', at: 3, turn: 1, step: 1 },
      { type: 'turn/end', at: 3, turn: 1, reason: 'completed' },
    );
    const profile = auditProfileFor({ provider: 'my-endpoint', model: 'local-llm' }).profile;
    await writeLog(store, 'generic', await withRequestSent('generic', driver.session.events, profile));
    const report = await auditSession({ store, sessionId: 'generic' });
    expect(report.ok).toBe(true);
    expect(report.rows[0]).toMatchObject({
      profileSource: 'generic',
      provider: 'my-endpoint',
      reportedCacheRead: null,
    });
  });

  it('reports a request its profile refuses as underivable, and fails', async () => {
    const { store } = open();
    const events = await standardLog('refused');
    // The same log, but the header names a model the built-in deepseek profile refuses.
    const edited = events.map((e) =>
      e.type === 'request/header'
        ? { ...e, header: { ...e.header, config: { ...e.header.config, model: 'no-such-model' } } }
        : e,
    );
    await writeLog(store, 'refused', edited);
    const report = await auditSession({ store, sessionId: 'refused' });
    expect(report.ok).toBe(false);
    expect(report.summary.digests.underivable).toEqual(['1.1', '1.2', '2.1', '3.1']);
    expect(report.rows[0]?.error).toContain('no-such-model');
  });
});

describe('audit profiles and prefix verdicts', () => {
  it('prefers the given profile, then built-ins, then a generic one; openai simulates OpenAI caching', () => {
    expect(auditProfileFor({ provider: 'deepseek', model: 'deepseek-chat' }).source).toBe('builtin');
    expect(auditProfileFor({ provider: 'deepseek', model: 'x' }, BUILTIN_PROFILES.deepseek).source).toBe('given');
    expect(auditProfileFor({ provider: 'openai', model: 'x' }, BUILTIN_PROFILES.deepseek).source).toBe('builtin');
    const generic = auditProfileFor({ provider: 'Odd Name', model: 'm', thinking: 'enabled' }).profile;
    expect(generic).toMatchObject({ name: 'Odd Name', thinkingField: true, models: [{ id: 'm' }] });
    expect(cacheModeFor({ provider: 'openai', model: 'x' })).toBe('openai');
    expect(cacheModeFor({ provider: 'scripted', model: 'x' })).toBe('deepseek');
  });

  it('lists the steps that broke the prefix', () => {
    const step = (id: string, epoch: number, contents: string[]): DerivedRequest =>
      ({
        id,
        epoch,
        replaces: 0,
        request: { messages: contents.map((content) => ({ role: 'user', content })) },
      }) as unknown as DerivedRequest;
    const steps = [
      step('1.1', 1, ['a']),
      step('1.2', 1, ['a', 'b']),
      step('2.1', 1, ['x', 'b', 'c']),
      step('2.2', 1, ['x']),
      step('3.1', 2, ['other']),
    ];
    const verdicts = prefixVerdicts(steps);
    expect(verdicts.map((v) => v.extends)).toEqual([null, true, false, false, null]);
    expect(verdicts[2]?.problem).toBe('messages[0] changed');
    expect(summarizePrefix(steps, verdicts)).toEqual({ pairs: 3, extended: 1, ratio: 1 / 3, broken: ['2.1', '2.2'] });
  });
});

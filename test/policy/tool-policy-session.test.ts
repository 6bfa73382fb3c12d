// The tool policy through the real stack (Temporal dev server, worker, SQLite, the scripted provider over
// HTTP): a model that tries allowed, denied and unmatched calls; an approval by short id remembered for the
// session; evaluators that fail, stall, doubt or answer nonsense, all escalated to ask; and the verdicts
// re-judged by a changed policy file.
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalShortId, type EventOf, type SessionEvent } from '../../src/core/index.js';
import { rejudgeVerdicts } from '../../src/audit/rejudge-verdicts.js';
import type { ToolDefinition } from '../../src/plugins/contracts.js';
import type { Plugin } from '../../src/plugins/plugin.js';
import { createPolicyEngine, policyEvaluators } from '../../src/policy/policy-engine.js';
import { parsePolicy } from '../../src/policy/policy-file.js';
import { approveUpdate, followupSignal, sessionWorkflowId } from '../../src/shared/session-messages.js';
import { temporal } from '../helpers/temporal-cli.js';
import { createWriteFileTool } from '../../src/tools/write-file.js';
import {
  expectProviderSawTheLog,
  startHarness,
  waitForState,
  waitForTurnEnd,
  type Harness,
} from '../helpers/session-harness.js';
import { echoTool } from '../helpers/test-tools.js';

const POLICY = {
  version: 'v1',
  rules: [
    { id: 'git-read', tool: 'run', when: [{ arg: '/command', oneOf: ['git status', 'npm test'] }], outcome: 'allow' },
    {
      id: 'no-rm',
      tool: 'run',
      when: [{ arg: '/command', regex: 'rm\\b.*' }],
      outcome: 'deny',
      reason: 'deleting files is not allowed here',
    },
    { id: 'writes-in-src', tool: 'write_file', when: [{ arg: '/path', inside: 'src' }], outcome: 'allow' },
  ],
  evaluator: { timeoutMs: 300, minConfidence: 0.8 },
};

/** A shell stand-in that records what it was asked to run. */
const ran: string[] = [];
const runTool: ToolDefinition = {
  schema: {
    name: 'run',
    description: 'Run a command.',
    parameters: { type: 'object', properties: { command: { type: 'string' } }, additionalProperties: false },
  },
  idempotent: false,
  run: (args) => {
    ran.push(String((args as { command?: unknown }).command));
    return Promise.resolve({ status: 'ok', output: 'ran' });
  },
};

/** Judges echo calls by their text (fine → allow; the rest fail in every way an evaluator can); no opinion on others. */
const evaluator: Plugin = {
  name: 'echo-classifier',
  policyVersion: 'c7',
  policy(call) {
    if (call.name !== 'echo') return undefined;
    const text = (JSON.parse(call.arguments) as { text: string }).text;
    if (text === 'fine')
      return { decision: 'allow', reason: 'harmless echo', scores: { risk: 0.01 }, confidence: 0.99 };
    if (text === 'throw') throw new Error('classifier is down');
    if (text === 'slow') return new Promise(() => undefined);
    if (text === 'unsure') return { decision: 'allow', confidence: 0.3, scores: { risk: 0.4 } };
    if (text === 'bad') return { decision: 'deny', reason: 'looks like exfiltration', confidence: 0.95 };
    return { decision: 'yes' } as never;
  },
};

const call = (id: string, name: string, args: Record<string, unknown>) => ({
  id,
  name,
  arguments: JSON.stringify(args),
});
const verdicts = (events: readonly SessionEvent[]) =>
  events.filter((e): e is EventOf<'policy/verdict'> => e.type === 'policy/verdict');
const result = (events: readonly SessionEvent[], callId: string) =>
  events.find((e): e is EventOf<'tool/result'> => e.type === 'tool/result' && e.callId === callId);

describe('the tool policy through the real stack', () => {
  let h: Harness;
  const policy = parsePolicy(JSON.stringify(POLICY), 'policy.json');
  beforeAll(async () => {
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'mixed' },
            toolCalls: [
              call('c1', 'run', { command: 'git status' }),
              call('c2', 'run', { command: 'rm -rf /' }),
              call('c3', 'write_file', { path: 'src/a.txt', content: 'a' }),
              call('c4', 'write_file', { path: 'docs/notes.txt', content: 'n' }),
            ],
          },
          { match: { lastUserContains: 'mixed' }, text: 'done mixed' },
          {
            match: { lastUserContains: 'again' },
            toolCalls: [
              call('c5', 'write_file', { path: 'docs/more.txt', content: 'm' }),
              call('c6', 'run', { command: 'curl example.com' }),
              call('c7', 'write_file', { path: 'src/link/escape.txt', content: 'x' }),
            ],
          },
          { match: { lastUserContains: 'again' }, text: 'done again' },
          {
            match: { lastUserContains: 'evaluate' },
            toolCalls: ['fine', 'throw', 'slow', 'unsure', 'junk', 'bad'].map((text, i) =>
              call(`e${i}`, 'echo', { text }),
            ),
          },
          { match: { lastUserContains: 'evaluate' }, text: 'done evaluate' },
        ],
      },
      tools: [runTool, createWriteFileTool(), echoTool],
      plugins: [evaluator],
      policy: createPolicyEngine(policy, policyEvaluators([evaluator])),
    });
  });
  afterAll(async () => h?.stop());

  const workspace = (sessionId: string) => join(tmpdir(), 'dh-workspaces', sessionId);

  it('allows, denies and asks by the rules; a remembered approval answers later asks; every verdict is logged once, first', async () => {
    const id = `policy-${Date.now()}`;
    // `src/link` leads outside `src` (to docs/): a write through it is no write "inside src".
    mkdirSync(join(workspace(id), 'src'), { recursive: true });
    mkdirSync(join(workspace(id), 'docs'), { recursive: true });
    symlinkSync(join(workspace(id), 'docs'), join(workspace(id), 'src', 'link'));
    const handle = await h.start(id);
    await handle.signal(followupSignal, { content: 'mixed' });
    const waiting = await waitForState(handle, (s) => s.pendingApproval !== null);
    expect(waiting.pendingApproval).toMatchObject({ callId: 'c4', shortId: approvalShortId('c4'), name: 'write_file' });
    expect(waiting.pendingApproval?.reason).toMatch(/no policy rule decides write_file/);
    // The short id names the waiting call; "remember" makes every later write_file ask answer itself.
    expect(
      await handle.executeUpdate(approveUpdate, {
        args: [{ callId: approvalShortId('c4'), decision: 'approve', by: 'ops', remember: 'tool' }],
      }),
    ).toEqual({ callId: 'c4', decision: 'approve' });
    let events = await waitForTurnEnd(h.store, id, 1);
    expect(ran).toEqual(['git status']);
    expect(result(events, 'c2')).toMatchObject({
      status: 'error',
      output: 'The call was denied: deleting files is not allowed here',
    });
    expect(result(events, 'c3')).toMatchObject({ status: 'ok' });
    expect(result(events, 'c4')).toMatchObject({ status: 'ok' });
    const decision = events.find((e) => e.type === 'approval/decision');
    const rule = events.find((e) => e.type === 'policy/rule');
    // Logged in one append with the decision, never without it.
    expect(rule?.seq).toBe((decision?.seq ?? -1) + 1);
    expect(rule).toMatchObject({
      callId: 'c4',
      by: 'ops',
      rule: { id: 'session:c4', tool: 'write_file', outcome: 'allow' },
    });

    await handle.signal(followupSignal, { content: 'again' });
    await waitForState(handle, (s) => s.pendingApproval?.callId === 'c6');
    // Denied by a client nobody here wrote: the `temporal` CLI, naming the call by its short id.
    const cli = await temporal(
      'workflow',
      'update',
      'execute',
      '--workflow-id',
      sessionWorkflowId(id),
      '--name',
      'approve',
      '--input',
      JSON.stringify({ callId: approvalShortId('c6'), decision: 'deny', by: 'temporal-cli' }),
    );
    expect(cli.code, cli.output).toBe(0);
    expect(cli.output).toMatch(/Result +map\[callId:c6 decision:deny\]/);
    events = await waitForTurnEnd(h.store, id, 2);
    expect(ran).toEqual(['git status']);
    expect(result(events, 'c6')).toMatchObject({ status: 'error', output: 'The call was denied by the approver.' });
    expect(readFileSync(join(workspace(id), 'docs', 'more.txt'), 'utf8')).toBe('m');

    const byCall = Object.fromEntries(verdicts(events).map((v) => [v.callId, v]));
    expect(Object.keys(byCall).sort()).toEqual(['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7']);
    expect(byCall.c1).toMatchObject({ outcome: 'allow', by: 'rule', rule: 'git-read', version: 'v1' });
    expect(byCall.c2).toMatchObject({ outcome: 'deny', by: 'rule', rule: 'no-rm' });
    expect(byCall.c3).toMatchObject({
      outcome: 'allow',
      rule: 'writes-in-src',
      paths: { 'arg:/path': 'src/a.txt', 'dir:src': 'src' },
    });
    expect(byCall.c4).toMatchObject({ outcome: 'ask', by: 'default' });
    expect(byCall.c5).toMatchObject({ outcome: 'allow', by: 'session-rule', rule: 'session:c4' });
    expect(byCall.c6).toMatchObject({ outcome: 'ask', by: 'default' });
    // Through the symlink the path resolves under docs/: not the writes-in-src rule, the remembered one.
    expect(byCall.c7).toMatchObject({
      outcome: 'allow',
      by: 'session-rule',
      paths: { 'arg:/path': 'docs/escape.txt' },
    });
    for (const v of verdicts(events)) {
      expect(v.inputs).toMatch(/^sha256:[0-9a-f]{64}$/);
      // The verdict comes before anything the call did.
      const after = events.filter(
        (e) => 'callId' in e && e.callId === v.callId && e.type !== 'policy/verdict' && e.type !== 'policy/rule',
      );
      expect(after.length).toBeGreaterThan(0);
      for (const e of after) expect(e.seq).toBeGreaterThan(v.seq);
    }
    // The policy changes no request: the model saw exactly what the log derives.
    await expectProviderSawTheLog(h, [id]);

    // Re-judged by the same rules: nothing differs. By rules where git status asks: that verdict is named.
    const same = await rejudgeVerdicts({ sessionId: id, events, policy });
    expect(same).toMatchObject({ ok: true, differs: 0, mismatched: 0, undetermined: 0 });
    const stricter = parsePolicy(JSON.stringify({ ...POLICY, version: 'v2', rules: POLICY.rules.slice(1) }), 'p2.json');
    const changed = await rejudgeVerdicts({ sessionId: id, events, policy: stricter });
    expect(changed.ok).toBe(false);
    expect(changed.verdicts.filter((v) => v.status === 'differs')).toEqual([
      expect.objectContaining({
        callId: 'c1',
        recorded: expect.objectContaining({ outcome: 'allow', rule: 'git-read' }),
        now: { outcome: 'ask', by: 'default' },
      }),
    ]);
  });

  it('evaluators answer what the rules leave open; a failure, a stall, doubt or nonsense asks, never allows', async () => {
    const id = `policy-eval-${Date.now()}`;
    const handle = await h.start(id);
    await handle.signal(followupSignal, { content: 'evaluate' });
    // Four calls ask, one after another: deny each.
    for (const callId of ['e1', 'e2', 'e3', 'e4']) {
      await waitForState(handle, (s) => s.pendingApproval?.callId === callId);
      await handle.executeUpdate(approveUpdate, { args: [{ callId, decision: 'deny' }] });
    }
    const events = await waitForTurnEnd(h.store, id, 1);
    const byCall = Object.fromEntries(verdicts(events).map((v) => [v.callId, v]));
    expect(byCall.e0).toMatchObject({
      outcome: 'allow',
      by: 'evaluator',
      evaluator: 'echo-classifier',
      version: 'c7',
      scores: { risk: 0.01 },
    });
    expect(byCall.e1).toMatchObject({
      outcome: 'ask',
      by: 'evaluator',
      escalated: 'echo-classifier failed: classifier is down',
    });
    expect(byCall.e2).toMatchObject({ outcome: 'ask', escalated: 'echo-classifier did not answer within 300 ms' });
    expect(byCall.e3).toMatchObject({ outcome: 'ask', scores: { risk: 0.4 } });
    expect(byCall.e3?.escalated).toMatch(/confidence 0.3, below 0.8/);
    expect(byCall.e4).toMatchObject({
      outcome: 'ask',
      escalated: 'echo-classifier answered something other than a verdict',
    });
    expect(byCall.e5).toMatchObject({ outcome: 'deny', by: 'evaluator', reason: 'looks like exfiltration' });
    expect(result(events, 'e0')).toMatchObject({ status: 'ok' });
    expect(result(events, 'e5')).toMatchObject({
      status: 'error',
      output: 'The call was denied: looks like exfiltration',
    });
    for (const callId of ['e1', 'e2', 'e3', 'e4'])
      expect(result(events, callId)?.output).toBe('The call was denied by the approver.');
  });
});

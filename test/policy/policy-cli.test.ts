// The tool policy as a user meets it: `dh worker` reads DH_POLICY (and refuses a broken file in one line
// naming line and column), `dh run` shows a denial and an ask with its short id, `dh approve --remember`
// answers it, `dh audit --rejudge` names the verdict a changed file would decide differently, and the
// running worker follows an edited file (and asks for everything while the file does not load).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalShortId } from '../../src/core/index.js';
import {
  dh,
  sessionIdOf,
  show,
  spawnDh,
  startLiveStack,
  testStackEnv,
  TEST_MODEL,
  type LiveStack,
} from '../cli/live-harness.js';
import { loggedVerdicts } from './policy-test-views.js';

const RULES = [
  { id: 'pwd', tool: 'shell', when: [{ arg: '/command', equals: 'pwd' }], outcome: 'allow' },
  { id: 'notes', tool: 'write_file', when: [{ arg: '/path', inside: 'notes' }], outcome: 'allow' },
  { id: 'other-writes', tool: 'write_file', outcome: 'deny', reason: 'write only under notes/' },
];

describe('the tool policy through dh', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-policy-cli-'));
  const policyFile = join(dir, 'policy.json');
  let live: LiveStack;
  beforeAll(async () => {
    writeFileSync(policyFile, JSON.stringify({ version: 'p1', rules: RULES }, null, 2));
    live = await startLiveStack(
      {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'policy-task' },
            toolCalls: [
              { id: 'c1', name: 'shell', arguments: { command: 'pwd' } },
              { id: 'c2', name: 'write_file', arguments: { path: 'secret.txt', content: 's' } },
              { id: 'c3', name: 'write_file', arguments: { path: 'notes/a.md', content: 'a' } },
              { id: 'c4', name: 'read_file', arguments: { path: 'notes/a.md' } },
            ],
          },
          { match: { lastUserContains: 'policy-task' }, text: 'All done.' },
          {
            match: { lastUserContains: 'edited-task' },
            toolCalls: [{ id: 'e1', name: 'shell', arguments: { command: 'pwd' } }],
          },
          { match: { lastUserContains: 'edited-task' }, text: 'Denied, as the new file says.' },
          {
            match: { lastUserContains: 'broken-task' },
            toolCalls: [{ id: 'b1', name: 'shell', arguments: { command: 'pwd' } }],
          },
          { match: { lastUserContains: 'broken-task' }, text: 'It asked.' },
        ],
      },
      { DH_POLICY: policyFile },
    );
  });
  afterAll(async () => {
    await live?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('run shows the denial and the ask; approve --remember by short id; audit --rejudge names a changed verdict', async () => {
    const { env } = live.stack;
    const run = spawnDh(['run', 'policy-task: look around'], env);
    const sessionId = await sessionIdOf(run);
    const shortId = approvalShortId('c4');
    await run.waitFor(new RegExp(`⏸ read_file needs approval \\[${shortId}\\]`), 60_000);
    expect(run.stderr()).toMatch(/✗ policy denied write_file \(rule other-writes\): write only under notes\//);
    const approved = await dh(['approve', sessionId, shortId, '--remember', 'tool'], env);
    expect(approved.code, show(approved)).toBe(0);
    const r = await run.result;
    expect(r.code, show(r)).toBe(0);
    expect(r.stderr).toMatch(/remembered for this session: allow read_file/);

    const verdicts = (await loggedVerdicts(sessionId, env)).map(
      (e) => `${String(e.callId)}:${String(e.outcome)}:${String(e.rule ?? e.by)}`,
    );
    expect(verdicts).toEqual(['c1:allow:pwd', 'c2:deny:other-writes', 'c3:allow:notes', 'c4:ask:default']);

    const same = await dh(['audit', sessionId, '--rejudge'], env);
    expect(same.code, show(same)).toBe(0);
    expect(same.stdout).toMatch(/^4 verdict\(s\) re-judged by .*policy\.json \(version p1\): 4 same, 0 differ/m);

    // pwd now asks: the verdict that allowed it is named, and the audit fails.
    const stricter = join(dir, 'stricter.json');
    writeFileSync(stricter, JSON.stringify({ version: 'p2', rules: RULES.slice(1) }));
    const changed = await dh(['audit', sessionId, '--rejudge', '--policy', stricter, '--json'], env);
    expect(changed.code, show(changed)).toBe(1);
    const report = JSON.parse(changed.stdout) as { differs: number; verdicts: { callId: string; status: string }[] };
    expect(report.differs).toBe(1);
    expect(report.verdicts.filter((v) => v.status === 'differs').map((v) => v.callId)).toEqual(['c1']);
    const text = await dh(['audit', sessionId, '--rejudge', '--policy', stricter], env);
    expect(text.stdout).toMatch(/^DIFFERS seq \d+ 1\.1 shell c1: was allow by pwd \(p1\) → now ask by default$/m);

    const noModel = await dh(['audit', sessionId, '--rejudge', '--ask-evaluators'], env);
    expect(noModel.code, show(noModel)).toBe(2);
    expect(noModel.stderr).toMatch(/--ask-evaluators: .*policy\.json names no evaluator \(evaluator\.llm\)/);

    const misplaced = await dh(['audit', sessionId, '--policy', stricter], env);
    expect(misplaced.code, show(misplaced)).toBe(2);
    expect(misplaced.stderr).toMatch(/--policy, --workspace and --ask-evaluators go with --rejudge/);
  }, 120_000);

  it('the running worker follows an edit of the file, and asks for every call while the file does not load', async () => {
    const { env } = live.stack;
    const verdictsOf = (sessionId: string) => loggedVerdicts(sessionId, env);
    // pwd is now denied: the next call is judged by version p3, with no worker restart.
    const edited = [{ id: 'no-shell', tool: 'shell', outcome: 'deny', reason: 'no shell today' }, ...RULES.slice(1)];
    writeFileSync(policyFile, JSON.stringify({ version: 'p3', rules: edited }, null, 2));
    const running = spawnDh(['run', 'edited-task: where am I'], env);
    const sessionId = await sessionIdOf(running);
    const run = await running.result;
    expect(run.code, show(run)).toBe(0);
    expect(run.stderr).toMatch(/✗ policy denied shell \(rule no-shell\): no shell today/);
    expect(await verdictsOf(sessionId)).toMatchObject([
      { callId: 'e1', outcome: 'deny', rule: 'no-shell', version: 'p3' },
    ]);
    await live.worker.waitFor(/tool policy .*policy\.json reloaded \(3 rules, version p3\)/, 10_000);

    // A half-written file: the call asks (fail closed) and says why; the worker says so once.
    writeFileSync(policyFile, '{ "version": "p4", "rules": [');
    const asking = spawnDh(['run', 'broken-task: where am I'], env);
    const askingId = await sessionIdOf(asking);
    await asking.waitFor(new RegExp(`⏸ shell needs approval \\[${approvalShortId('b1')}\\]`), 60_000);
    await live.worker.waitFor(
      /tool policy .*policy\.json no longer loads, so every tool call asks until it does/,
      10_000,
    );
    const [verdict] = await verdictsOf(askingId);
    expect(verdict).toMatchObject({
      callId: 'b1',
      outcome: 'ask',
      by: 'default',
      version: expect.stringMatching(/^invalid-/),
    });
    expect(verdict?.reason).toMatch(
      /the tool policy does not load, so every call asks until it does: invalid tool policy in .*not valid JSON/,
    );
    const denied = await dh(['approve', askingId, approvalShortId('b1'), '--deny'], env);
    expect(denied.code, show(denied)).toBe(0);
    expect((await asking.result).code).toBe(0);
    writeFileSync(policyFile, JSON.stringify({ version: 'p1', rules: RULES }, null, 2));
  }, 120_000);

  it('a broken policy file stops the worker at start with one line naming where', async () => {
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{\n  "rules": [\n    { "id": "a", "tool": "shell", "outcome": "allow", }\n  ]\n}\n');
    const stack = testStackEnv('http://127.0.0.1:9/v1', { DH_POLICY: broken });
    try {
      const r = await dh(['worker'], stack.env);
      expect(r.code, show(r)).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(
        lines.filter((l) => l.includes('policy')),
        show(r),
      ).toEqual([
        expect.stringMatching(new RegExp(`invalid tool policy in ${broken}: not valid JSON: .*line 3, column \\d+`)),
      ]);
      // So is a pattern RE2 cannot run, naming the rule.
      const lookahead = join(dir, 'lookahead.json');
      const npmOnly = {
        id: 'npm-only',
        tool: 'shell',
        when: [{ arg: '/command', regex: 'npm(?= )' }],
        outcome: 'allow',
      };
      writeFileSync(lookahead, JSON.stringify({ rules: [npmOnly] }));
      const unrunnable = await dh(['worker'], { ...stack.env, DH_POLICY: lookahead });
      expect(unrunnable.code, show(unrunnable)).toBe(1);
      expect(unrunnable.stderr.split('\n').filter((l) => l.includes('policy'))).toEqual([
        expect.stringMatching(
          /^dh: invalid tool policy in .*lookahead\.json: rules\[0\]\.when\[0\]\.regex: rule "npm-only": RE2 cannot run this regular expression \(invalid perl operator: \(\?=\)/,
        ),
      ]);
      // An LLM evaluator whose key variable is not set is refused at start too.
      const keyless = join(dir, 'keyless.json');
      const llm = { baseUrl: 'http://127.0.0.1:9/v1', model: 'm', apiKeyEnv: 'DH_TEST_UNSET_POLICY_KEY' };
      writeFileSync(keyless, JSON.stringify({ rules: [], evaluator: { llm } }));
      const refused = await dh(['worker'], { ...stack.env, DH_POLICY: keyless });
      expect(refused.code, show(refused)).toBe(1);
      expect(refused.stderr).toMatch(
        /invalid tool policy in .*keyless\.json: evaluator\.llm: the LLM policy evaluator's key variable DH_TEST_UNSET_POLICY_KEY is not set/,
      );
      const nothing = await dh(['audit', 'nobody', '--rejudge'], { ...stack.env, DH_POLICY: undefined });
      expect(nothing.code, show(nothing)).toBe(2);
      expect(nothing.stderr.trim()).toMatch(/^dh: no policy file to re-judge by: pass --policy <file>/);
      const missing = await dh(['audit', 'nobody', '--rejudge'], { ...stack.env, DH_POLICY: join(dir, 'none.json') });
      expect(missing.code, show(missing)).toBe(1);
      expect(missing.stderr).toMatch(/no such file \(named by DH_POLICY\)/);
    } finally {
      stack.cleanup();
    }
  }, 120_000);
});

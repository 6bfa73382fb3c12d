// Issue 48: a policy regex `(a+)+$` and a model that sends 48 "a"s and a "b" once held `dh worker` for
// minutes (a backtracking engine), its queries unanswered; a glob of many stars did the same. A real worker
// with such a file now logs its verdicts and the run ends; `dh audit --rejudge` by that file ends too.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dh, sessionIdOf, show, spawnDh, startLiveStack, TEST_MODEL, type LiveStack } from '../cli/live-harness.js';
import { loggedVerdicts } from './policy-test-views.js';

const RULES = [
  { id: 'nested', tool: 'shell', when: [{ arg: '/command', regex: '(a+)+$' }], outcome: 'allow' },
  { id: 'stars', tool: 'read_file', when: [{ arg: '/path', glob: '*a*a*a*a*a*a*a*a*c' }], outcome: 'allow' },
  { id: 'rest', tool: '*', outcome: 'deny', reason: 'not this call' },
];

describe('a worker whose policy a backtracking engine could not finish', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-policy-redos-'));
  const policyFile = join(dir, 'policy.json');
  let live: LiveStack;
  beforeAll(async () => {
    writeFileSync(policyFile, JSON.stringify({ version: 'redos', rules: RULES }));
    live = await startLiveStack(
      {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [
          {
            match: { lastUserContains: 'redos-task' },
            toolCalls: [
              { id: 'r1', name: 'shell', arguments: { command: `${'a'.repeat(48)}b` } },
              { id: 'r2', name: 'read_file', arguments: { path: 'a'.repeat(64) } },
            ],
          },
          { match: { lastUserContains: 'redos-task' }, text: 'Both denied.' },
        ],
      },
      { DH_POLICY: policyFile },
    );
  });
  afterAll(async () => {
    await live?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('judges the calls, ends the run, and re-judges them offline', async () => {
    const { env } = live.stack;
    const run = spawnDh(['run', 'redos-task: try these'], env);
    const sessionId = await sessionIdOf(run);
    const r = await run.result;
    expect(r.code, show(r)).toBe(0);
    expect(r.stderr).toMatch(/✗ policy denied shell \(rule rest\): not this call/);
    expect(r.stderr).toMatch(/✗ policy denied read_file \(rule rest\): not this call/);
    const verdicts = (await loggedVerdicts(sessionId, env)).map(
      (e) => `${String(e.callId)}:${String(e.outcome)}:${String(e.rule ?? e.by)}`,
    );
    expect(verdicts).toEqual(['r1:deny:rest', 'r2:deny:rest']);

    const audit = await dh(['audit', sessionId, '--rejudge'], env);
    expect(audit.code, show(audit)).toBe(0);
    expect(audit.stdout).toMatch(/^2 verdict\(s\) re-judged by .*policy\.json \(version redos\): 2 same, 0 differ/m);
  }, 120_000);
});

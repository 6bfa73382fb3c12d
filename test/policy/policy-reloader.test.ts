// A worker's policy follows its file on a real filesystem: an edit is read once and applies to the next
// call, a rewrite with the same rules is no reload, and a file that stops loading makes every call ask
// (evaluators and remembered rules included) until it loads again.
import { mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { PolicyRule } from '../../src/core/index.js';
import { createPolicyEngine } from '../../src/policy/policy-engine.js';
import { loadPolicy, type Policy } from '../../src/policy/policy-file.js';
import { reloadingPolicy } from '../../src/policy/policy-reloader.js';

const dir = mkdtempSync(join(tmpdir(), 'dh-policy-reload-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fileWith = (rules: unknown[], version?: string) => JSON.stringify({ ...(version ? { version } : {}), rules });
const allowShell = [{ id: 'shell', tool: 'shell', outcome: 'allow' }];
const denyShell = [{ id: 'shell', tool: 'shell', outcome: 'deny', reason: 'no' }];

async function followed(name: string, text: string) {
  const file = join(dir, name);
  writeFileSync(file, text);
  const initial = (await loadPolicy({ home: dir, env: { DH_POLICY: file } })) as Policy;
  const events: string[] = [];
  const source = reloadingPolicy(initial, {
    reloaded: (p) => events.push(`reloaded ${p.version}`),
    broken: (problem) => events.push(`broken ${problem}`),
  });
  return { file, source, events };
}

const versionOf = async (source: ReturnType<typeof reloadingPolicy>) => {
  const now = await source.current();
  return now.ok ? now.policy.version : `not ok ${now.version}`;
};

describe('reloadingPolicy', () => {
  it('reads an edit once, and a rewrite with the same rules is no reload', async () => {
    const { file, source, events } = await followed('edit.json', fileWith(allowShell, 'v1'));
    expect(await versionOf(source)).toBe('v1');
    writeFileSync(file, fileWith(allowShell, 'v1'));
    expect(await versionOf(source)).toBe('v1');
    expect(events).toEqual([]);
    writeFileSync(file, fileWith(denyShell, 'v2'));
    expect(await versionOf(source)).toBe('v2');
    expect(await versionOf(source)).toBe('v2');
    expect(events).toEqual(['reloaded v2']);
  });

  it('notices an edit of the same size whose mtime was put back', async () => {
    const { file, source, events } = await followed('same-size.json', fileWith(allowShell));
    expect(await versionOf(source)).toMatch(/^rules-/);
    const before = statSync(file);
    const edited = fileWith(allowShell).replace('allow', 'deny ');
    expect(edited.length).toBe(fileWith(allowShell).length);
    writeFileSync(file, edited.replace('"deny "', '"deny" '));
    utimesSync(file, before.atime, before.mtime);
    const now = await source.current();
    expect(now.ok && now.policy.rules[0]?.outcome).toBe('deny');
    expect(events).toHaveLength(1);
  });

  it('fails closed while the file does not load, says so once per problem, and recovers', async () => {
    const { file, source, events } = await followed('broken.json', fileWith(allowShell, 'v1'));
    writeFileSync(file, '{ "rules": [');
    const broken = await source.current();
    expect(broken).toMatchObject({ ok: false, file, version: expect.stringMatching(/^invalid-[0-9a-f]{12}$/) });
    expect(broken.ok ? '' : broken.problem).toMatch(/^invalid tool policy in .*broken\.json: not valid JSON/);
    await source.current();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatch(/^broken invalid tool policy/);

    rmSync(file);
    expect(await versionOf(source)).toBe('not ok unreadable');
    expect(events[1]).toBe('broken cannot read it (ENOENT)');
    writeFileSync(file, fileWith(allowShell, 'v1'));
    expect(await versionOf(source)).toBe('v1');
    expect(events[2]).toBe('reloaded v1');
  });

  it('an edit to a pattern RE2 cannot run stops the file loading, naming the rule, until it is fixed', async () => {
    const { file, source, events } = await followed('lookahead.json', fileWith(allowShell, 'v1'));
    const lookahead = [
      { id: 'npm-only', tool: 'shell', when: [{ arg: '/command', regex: 'npm(?= )' }], outcome: 'allow' },
    ];
    writeFileSync(file, fileWith(lookahead, 'v2'));
    const broken = await source.current();
    expect(broken).toMatchObject({ ok: false, version: expect.stringMatching(/^invalid-/) });
    expect(broken.ok ? '' : broken.problem).toMatch(
      /^invalid tool policy in .*lookahead\.json: rules\[0\]\.when\[0\]\.regex: rule "npm-only": RE2 cannot run this regular expression/,
    );
    const verdict = await createPolicyEngine(source).judge({
      call: { callId: 'c1', name: 'shell', arguments: '{"command":"npm test"}' },
      sessionRules: [],
      workspace: dir,
      context: { sessionId: 's', turn: 1, step: 1 } as never,
      at: 1,
    });
    expect(verdict).toMatchObject({ outcome: 'ask', by: 'default' });
    expect(verdict.reason).toMatch(/does not load, so every call asks until it does: .*rule "npm-only"/);
    writeFileSync(file, fileWith(allowShell, 'v3'));
    expect(await versionOf(source)).toBe('v3');
    expect(events).toEqual([expect.stringMatching(/^broken .*rule "npm-only"/), 'reloaded v3']);
  });

  it('concurrent judgements share one read', async () => {
    const { file, source, events } = await followed('concurrent.json', fileWith(allowShell, 'v1'));
    writeFileSync(file, fileWith(denyShell, 'v2'));
    const all = await Promise.all(Array.from({ length: 20 }, () => source.current()));
    expect(new Set(all).size).toBe(1);
    expect(events).toEqual(['reloaded v2']);
  });

  it('a verdict while the file does not load asks, and neither evaluators nor remembered rules can allow', async () => {
    const { file, source } = await followed('engine.json', fileWith([], 'v1'));
    let asked = 0;
    const engine = createPolicyEngine(source, [
      {
        name: 'lenient',
        version: '1',
        evaluate: () => {
          asked += 1;
          return { decision: 'allow', confidence: 1 };
        },
      },
    ]);
    const judge = (rules: PolicyRule[]) =>
      engine.judge({
        call: { callId: 'c1', name: 'shell', arguments: '{"command":"ls"}' },
        sessionRules: rules,
        workspace: dir,
        context: { sessionId: 's', turn: 1, step: 1 } as never,
        at: 1,
      });
    expect(await judge([])).toMatchObject({ outcome: 'allow', by: 'evaluator' });
    expect(asked).toBe(1);
    writeFileSync(file, 'not json');
    const remembered = { id: 'session:1', tool: 'shell', outcome: 'allow' } as PolicyRule;
    const verdict = await judge([remembered]);
    expect(verdict).toMatchObject({ outcome: 'ask', by: 'default', version: expect.stringMatching(/^invalid-/) });
    expect(verdict.reason).toMatch(/^the tool policy does not load, so every call asks until it does: /);
    expect(asked).toBe(1);
  });
});

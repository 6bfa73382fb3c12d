// The tool policy's pure half: the file's validation (one line naming the file and where), rule order and
// every predicate, fail-closed defaults, remembered rules that only answer asks, and path facts.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decideCall } from '../../src/policy/decide-call.js';
import { loadPolicy, parsePolicy } from '../../src/policy/policy-file.js';
import { gatherPathFacts } from '../../src/policy/policy-paths.js';
import { policyProblem } from './policy-test-views.js';
import type { PolicyRule } from '../../src/core/index.js';

const policyOf = (rules: unknown[], extra: Record<string, unknown> = {}) =>
  parsePolicy(JSON.stringify({ rules, ...extra }), '/etc/dh/policy.json');
const decide = (rules: readonly PolicyRule[], name: string, args: unknown, remembered: PolicyRule[] = []) =>
  decideCall(rules, remembered, { name, args }, {});

describe('the policy file', () => {
  const problem = policyProblem;

  it('names the line and column of a JSON syntax error, in one line', () => {
    const message = problem('{\n  "rules": [\n    { "id": "a", }\n  ]\n}');
    expect(message).toMatch(/^invalid tool policy in \/etc\/dh\/policy\.json: not valid JSON: .*line 3, column \d+/);
    expect(message).not.toContain('\n');
  });

  it.each([
    // V8 names no offset for an unexpected token, and quotes the whole text (newlines too) instead.
    ['{\n  "rules": [,]\n}', "Unexpected token ',' at line 2, column 13"],
    ['// rules\n{ "rules": [] }', "Unexpected token '/' at line 1, column 1"],
    ['{\n  "rules": [\n    { "id": tru }\n  ]\n}', 'at line 3, column 13'],
  ])('names where an unexpected token is, in one line, without quoting the file: %j', (text, where) => {
    const message = problem(text);
    expect(message).toMatch(/^invalid tool policy in \/etc\/dh\/policy\.json: not valid JSON: /);
    expect(message).toContain(where);
    expect(message).not.toContain('\n');
    expect(message).not.toContain('is not valid JSON');
  });

  it.each([
    [
      '{"rules": [{"id": "a", "tool": "x", "outcome": "maybe"}]}',
      'rules[0].outcome: expected "allow" or "deny" or "ask"',
    ],
    [
      '{"rules": [{"id": "a", "tool": "x", "outcome": "allow", "when": [{"arg": "/p"}]}]}',
      'rules[0].when[0]: needs one of',
    ],
    [
      '{"rules": [{"id": "a", "tool": "x", "outcome": "allow", "when": [{"arg": "/p", "prefix": "a", "glob": "b*"}]}]}',
      'takes one operator, not glob and prefix',
    ],
    [
      '{"rules": [{"id": "a", "tool": "x", "outcome": "allow", "when": [{"arg": "p", "equals": 1}]}]}',
      'rules[0].when[0].arg: expected a JSON pointer',
    ],
    [
      '{"rules": [{"id": "a", "tool": "x", "outcome": "allow", "when": [{"arg": "/p", "regex": "(("}]}]}',
      'rules[0].when[0].regex: not a valid regular expression',
    ],
    [
      '{"rules": [{"id": "a", "tool": "x", "outcome": "allow"}, {"id": "a", "tool": "y", "outcome": "deny"}]}',
      'rules[1].id: id "a" repeats',
    ],
    [
      '{"rules": [{"id": "session:x", "tool": "x", "outcome": "allow"}]}',
      `rules[0].id: "session:" ids are the session's`,
    ],
    ['{"rules": [], "colour": 1}', 'unknown key "colour"'],
    ['{"rules": [{"id": "a", "tool": "x", "outcome": "allow", "__proto__": {}}]}', 'a "__proto__" key is not allowed'],
    ['', 'the file is empty'],
  ])('refuses %s', (text, expected) => {
    expect(problem(text)).toContain(expected);
  });

  it('versions the rules by their digest unless the file names a version', () => {
    const a = policyOf([{ id: 'a', tool: 'x', outcome: 'allow' }]);
    const b = policyOf([{ id: 'a', tool: 'x', outcome: 'deny' }]);
    expect(a.version).toMatch(/^rules-[0-9a-f]{12}$/);
    expect(a.version).not.toBe(b.version);
    expect(policyOf([], { version: '2026-12' }).version).toBe('2026-12');
  });

  it('reads DH_POLICY (which must exist) or $DH_HOME/policy.json (which may not)', async () => {
    const home = mkdtempSync(join(tmpdir(), 'dh-policy-'));
    try {
      expect(await loadPolicy({ home, env: {} })).toBeUndefined();
      await expect(loadPolicy({ home, env: { DH_POLICY: join(home, 'nope.json') } })).rejects.toThrow(
        /no such file \(named by DH_POLICY\)/,
      );
      await expect(loadPolicy({ home, env: { DH_POLICY: '' } })).rejects.toThrow(/set but empty/);
      writeFileSync(join(home, 'policy.json'), '{"rules": []}');
      expect((await loadPolicy({ home, env: {} }))?.rules).toEqual([]);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('deciding a call', () => {
  const rules = policyOf([
    { id: 'git', tool: 'shell', when: [{ arg: '/command', oneOf: ['git status', 'npm test'] }], outcome: 'allow' },
    { id: 'rm', tool: 'shell', when: [{ arg: '/command', regex: 'rm\\s.*' }], outcome: 'deny', reason: 'no deleting' },
    { id: 'npx', tool: 'shell', when: [{ arg: '/command', prefix: 'npx vitest ' }], outcome: 'allow' },
    { id: 'ls', tool: 'shell', when: [{ arg: '/command', glob: 'ls *' }], outcome: 'allow' },
    { id: 'fs-read', tool: 'mcp__fs__read_*', outcome: 'allow' },
    { id: 'fs', tool: 'mcp__fs', outcome: 'ask', reason: 'writes to the shared disk' },
    { id: 'deep', tool: ['a', 'b'], when: [{ arg: '/opts/0/mode', equals: { ro: true } }], outcome: 'allow' },
    { id: 'esc', tool: 'x', when: [{ arg: '/a~1b/c~0d', equals: 1 }], outcome: 'allow' },
  ]).rules;

  it.each([
    ['shell', { command: 'git status' }, 'allow', 'git'],
    ['shell', { command: 'git status; rm -rf ~' }, 'ask', undefined],
    ['shell', { command: 'rm -rf /' }, 'deny', 'rm'],
    // The regex is anchored: "rm" inside a longer command is not "rm ...".
    ['shell', { command: 'echo rm -rf /' }, 'ask', undefined],
    ['shell', { command: 'npx vitest run x' }, 'allow', 'npx'],
    ['shell', { command: 'ls src/a/b' }, 'allow', 'ls'],
    ['shell', { command: 42 }, 'ask', undefined],
    ['shell', {}, 'ask', undefined],
    ['mcp__fs__read_file', {}, 'allow', 'fs-read'],
    ['mcp__fs__write_file', {}, 'ask', 'fs'],
    ['mcp__fsx__write_file', {}, 'ask', undefined],
    ['b', { opts: [{ mode: { ro: true } }] }, 'allow', 'deep'],
    ['b', { opts: [{ mode: { ro: false } }] }, 'ask', undefined],
    ['x', { 'a/b': { 'c~d': 1 } }, 'allow', 'esc'],
    ['unknown_tool', {}, 'ask', undefined],
  ])('%s %j → %s (%s)', (name, args, outcome, rule) => {
    const decision = decide(rules, name, args);
    expect(decision.outcome).toBe(outcome);
    expect(decision.rule).toBe(rule);
  });

  it('fails closed when the arguments are not JSON: no predicate holds', () => {
    expect(decide(rules, 'shell', undefined)).toMatchObject({ outcome: 'ask', by: 'default' });
  });

  it('takes the first matching rule', () => {
    const ordered = policyOf([
      { id: 'first', tool: '*', outcome: 'deny' },
      { id: 'second', tool: 'shell', outcome: 'allow' },
    ]).rules;
    expect(decide(ordered, 'shell', {})).toMatchObject({ outcome: 'deny', rule: 'first' });
  });

  it('a remembered rule answers asks only, never overriding what the file decides', () => {
    const remembered: PolicyRule[] = [
      { id: 'session:c1', tool: 'shell', outcome: 'allow' },
      { id: 'session:c2', tool: 'mcp__fs__write_file', outcome: 'deny' },
    ];
    expect(decide(rules, 'shell', { command: 'rm -rf /' }, remembered)).toMatchObject({ outcome: 'deny', rule: 'rm' });
    expect(decide(rules, 'shell', { command: 'make' }, remembered)).toMatchObject({
      outcome: 'allow',
      by: 'session-rule',
      rule: 'session:c1',
    });
    expect(decide(rules, 'mcp__fs__write_file', {}, remembered)).toMatchObject({ outcome: 'deny', by: 'session-rule' });
  });
});

describe('path facts', () => {
  const root = mkdtempSync(join(tmpdir(), 'dh-policy-paths-'));
  const ws = join(root, 'ws');
  mkdirSync(join(ws, 'src', 'deep'), { recursive: true });
  mkdirSync(join(ws, 'docs'));
  mkdirSync(join(root, 'outside'));
  symlinkSync(join(root, 'outside'), join(ws, 'src', 'out'));
  symlinkSync(join(ws, 'docs'), join(ws, 'src', 'docs-link'));
  symlinkSync(join(ws, 'src'), join(ws, 'src-link'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const rules = policyOf([{ id: 'w', tool: 'write', when: [{ arg: '/path', inside: 'src' }], outcome: 'allow' }]).rules;
  const judge = async (path: unknown) => {
    const facts = await gatherPathFacts(rules, 'write', { path }, ws);
    return { facts, outcome: decideCall(rules, [], { name: 'write', args: { path } }, facts).outcome };
  };

  it.each([
    ['src/a.ts', 'allow', 'src/a.ts'],
    ['src/deep/new/file.ts', 'allow', 'src/deep/new/file.ts'],
    ['./src/../src/a.ts', 'allow', 'src/a.ts'],
    ['src-link/a.ts', 'allow', 'src/a.ts'],
    ['src', 'allow', 'src'],
    ['srcfoo/a.ts', 'ask', 'srcfoo/a.ts'],
    ['src/../docs/a.md', 'ask', 'docs/a.md'],
    ['src/docs-link/a.md', 'ask', 'docs/a.md'],
    ['../outside/a', 'ask', null],
    ['src/out/a', 'ask', null],
    ['/etc/passwd', 'ask', null],
    ['', 'ask', null],
    ['src/\u0000x', 'ask', null],
  ])('%j → %s', async (path, outcome, resolved) => {
    const { facts, outcome: got } = await judge(path);
    expect(got).toBe(outcome);
    expect(facts['arg:/path']).toBe(resolved);
  });

  it('takes an absolute path inside the workspace as the path it names', async () => {
    expect(await judge(join(ws, 'src', 'x.ts'))).toMatchObject({
      outcome: 'allow',
      facts: { 'arg:/path': 'src/x.ts' },
    });
    expect((await judge(42)).outcome).toBe('ask');
  });
});

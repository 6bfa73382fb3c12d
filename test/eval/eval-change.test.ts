// The declared change of an eval: applied to a recorded header, read from a file with errors that name the file,
// line and column, and described in one line.
import { describe, expect, it } from 'vitest';
import type { RequestHeader } from '../../src/core/index.js';
import {
  applyEvalChange,
  describeEvalChange,
  EVAL_CHANGE_INVALID,
  parseEvalChangeText,
} from '../../src/eval/eval-change.js';
import { evalSessionIdFor } from '../../src/eval/eval-log.js';
import { EvalChange } from '../../src/shared/eval-contracts.js';

const tool = (name: string) => ({ name, description: name, parameters: { type: 'object' } });
const recorded: RequestHeader = {
  config: { provider: 'deepseek', model: 'deepseek-chat', temperature: 0, includeUsage: true },
  system: 'You are helpful.',
  tools: [tool('read_file'), tool('shell')],
  contextWindow: 128_000,
};

describe('applyEvalChange', () => {
  it('changes only what the change names', () => {
    const changed = applyEvalChange(recorded, { model: 'deepseek-reasoner', temperature: 0.7 });
    expect(changed).toEqual({
      ...recorded,
      config: { ...recorded.config, model: 'deepseek-reasoner', temperature: 0.7 },
    });
    expect(applyEvalChange(recorded, { system: 'Be terse.' })).toEqual({ ...recorded, system: 'Be terse.' });
  });

  it('replaces, removes and adds tools in that order', () => {
    expect(applyEvalChange(recorded, { removeTools: ['shell'], addTools: [tool('grep')] }).tools).toEqual([
      tool('read_file'),
      tool('grep'),
    ]);
    expect(applyEvalChange(recorded, { tools: [tool('grep')], removeTools: ['grep'] }).tools).toEqual([]);
  });

  it('refuses a change that names tools the request does not have, repeats one, or breaks the header', () => {
    expect(() => applyEvalChange(recorded, { removeTools: ['nope'] })).toThrow(
      /removeTools names tools the request does not have: nope/,
    );
    expect(() => applyEvalChange(recorded, { addTools: [tool('shell')] })).toThrow(
      /addTools repeats tools the request already has: shell/,
    );
    try {
      applyEvalChange(recorded, { removeTools: ['nope'] });
    } catch (error) {
      expect((error as { code?: string }).code).toBe(EVAL_CHANGE_INVALID);
    }
  });

  it('an empty change is refused by its schema', () => {
    expect(EvalChange.safeParse({}).success).toBe(false);
    expect(EvalChange.safeParse({ model: 'm' }).success).toBe(true);
    expect(EvalChange.safeParse({ model: 'm', colour: 'red' }).success).toBe(false);
  });
});

describe('parseEvalChangeText', () => {
  it('reads JSON and YAML', () => {
    expect(parseEvalChangeText('{"model":"m","temperature":0.5}', 'c.json')).toEqual({ model: 'm', temperature: 0.5 });
    expect(parseEvalChangeText('model: m\nsystem: |\n  Be terse.\n', 'c.yaml')).toEqual({
      model: 'm',
      system: 'Be terse.\n',
    });
  });

  it('names the file, line and column of a syntax error, and the path of an invalid field', () => {
    expect(() => parseEvalChangeText('{\n  "model": "m",,\n}', 'change.json')).toThrow(
      /^change\.json:2:\d+: not valid JSON or YAML: Unexpected , in flow map$/,
    );
    expect(() => parseEvalChangeText('{"temperature": 9}', 'change.json')).toThrow(/^change\.json: temperature: /);
    expect(() => parseEvalChangeText('{"tools": [{"name": "bad name"}]}', 'change.json')).toThrow(
      /^change\.json: tools\.0\./,
    );
    expect(() => parseEvalChangeText('{}', 'change.json')).toThrow(/^change\.json: \(top level\): the change is empty/);
  });
});

describe('describeEvalChange and eval log ids', () => {
  it('describes a change in one line', () => {
    expect(describeEvalChange({ model: 'm', temperature: 0, system: 'abc', removeTools: ['shell'] })).toBe(
      'model=m, temperature=0, system (3 chars), -tools [shell]',
    );
  });

  it('gives each (run, source, step) its own id within the CLI session-id rules', () => {
    expect(evalSessionIdFor('run-1', 'my-session', 12)).toBe('eval.run-1.my-session.s12');
    const long = 'x'.repeat(150);
    const a = evalSessionIdFor('run-1', long, 3);
    const b = evalSessionIdFor('run-1', `${long}y`, 3);
    expect(a).not.toBe(b);
    for (const id of [a, b]) {
      expect(id.length).toBeLessThanOrEqual(120);
      expect(id).toMatch(/^[A-Za-z0-9._-]+$/);
    }
  });
});

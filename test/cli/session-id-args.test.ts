// The CLI holds the one session-id rule in every session argument, before it opens a store or connects: an
// id of only dots or with a leading "-" (which no session can have) is a usage error, exit 2, naming the rule.
import { afterAll, describe, expect, it } from 'vitest';
import { cleanEnv, describeRun, runDh, tempHome } from './operator-cli.js';

describe('session ids on the command line', () => {
  const home = tempHome('dh-session-ids-');
  afterAll(() => home.cleanup());

  it('refuses dot-only ids and a leading "-" as usage errors (exit 2)', async () => {
    const env = cleanEnv({ DH_HOME: home.home });
    const cases: Array<[readonly string[], RegExp]> = [
      [['log', '..'], /only dots/],
      [['audit', '--', '-rf'], /may not start with "-"/],
      [['steer', '--', '--help', 'hello'], /may not start with "-"/],
      [['fork', 'some-session', '--at', '1', '--as', '.'], /only dots/],
    ];
    const results = await Promise.all(cases.map(([args]) => runDh(args, env)));
    results.forEach((result, i) => {
      const [args, problem] = cases[i] as [readonly string[], RegExp];
      expect(result.code, `dh ${args.join(' ')}\n${describeRun(result)}`).toBe(2);
      expect(result.stderr, `dh ${args.join(' ')}`).toMatch(problem);
    });
  }, 120_000);
});

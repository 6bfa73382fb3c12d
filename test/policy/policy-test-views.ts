// What the policy tests read back: a policy file's problem as the one line a user sees, and the
// `policy/verdict` events of a session as `dh log --json` prints them.
import { parsePolicy } from '../../src/policy/policy-file.js';
import { dh } from '../cli/live-harness.js';

/** The message parsing `text` as /etc/dh/policy.json fails with, or 'no error'. */
export function policyProblem(text: string): string {
  try {
    parsePolicy(text, '/etc/dh/policy.json');
  } catch (error) {
    return (error as Error).message;
  }
  return 'no error';
}

/** The session's verdicts, read through `dh log --json` as a user would. */
export async function loggedVerdicts(sessionId: string, env: NodeJS.ProcessEnv): Promise<Record<string, unknown>[]> {
  const log = await dh(['log', sessionId, '--json'], env);
  return log.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((e) => e.type === 'policy/verdict');
}

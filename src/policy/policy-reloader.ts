// Keeps a worker's tool policy current with its file: each judgement stats the file and reads it again only
// when it changed, so an edit applies from the next call on without restarting the fleet. A file that stops
// loading (a typo mid-edit, removed) makes every call ask, fail closed, until it loads again.
import { readFile, stat } from 'node:fs/promises';
import { canonicalJson, sha256Digest } from '../core/canonical-json.js';
import { DhError } from '../core/errors.js';
import { parsePolicy, type Policy } from './policy-file.js';

/** The policy to judge by now: the file's, or why the file does not load (the call then asks). */
export type PolicyNow =
  | { readonly ok: true; readonly policy: Policy }
  | { readonly ok: false; readonly file: string; readonly version: string; readonly problem: string };

export interface PolicySource {
  current(): Promise<PolicyNow>;
}

export interface PolicyReloadEvents {
  /** The file loaded with other rules than before. */
  readonly reloaded?: (policy: Policy) => void;
  /** The file no longer loads; said once per distinct problem. */
  readonly broken?: (problem: string, file: string) => void;
}

/** A policy that never changes (tests, embedders that build one in code). */
export function fixedPolicy(policy: Policy): PolicySource {
  const now: PolicyNow = { ok: true, policy };
  return { current: () => Promise.resolve(now) };
}

/** What makes two loads the same policy: the rules, the evaluator bounds and the version they are logged under. */
function sameRules(a: Policy, b: Policy): boolean {
  const shape = (p: Policy) => canonicalJson({ version: p.version, rules: p.rules, evaluator: p.evaluator });
  return shape(a) === shape(b);
}

/** Follows `initial.file`; the first judgement reads the file once more, so an edit during start-up is not lost. */
export function reloadingPolicy(initial: Policy, events: PolicyReloadEvents = {}): PolicySource {
  const { file } = initial;
  let now: PolicyNow = { ok: true, policy: initial };
  let seen: string | undefined;
  let lastProblem: string | undefined;
  let inFlight: Promise<PolicyNow> | undefined;

  const refresh = async (): Promise<PolicyNow> => {
    let key: string;
    try {
      // Nanosecond times, the inode (an editor's rename) and the size: any edit changes one of them.
      const s = await stat(file, { bigint: true });
      key = `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
    } catch (error) {
      return settle(undefined, `cannot read it (${(error as NodeJS.ErrnoException).code ?? 'error'})`, 'unreadable');
    }
    if (key === seen) return now;
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      return settle(undefined, `cannot read it (${(error as NodeJS.ErrnoException).code ?? 'error'})`, 'unreadable');
    }
    seen = key;
    try {
      return settle(parsePolicy(text, file));
    } catch (error) {
      const problem = error instanceof DhError ? error.message : String(error);
      return settle(undefined, problem, `invalid-${sha256Digest(text).slice(7, 19)}`);
    }
  };

  const settle = (loaded: Policy | undefined, problem = '', version = ''): PolicyNow => {
    if (loaded !== undefined) {
      const changed = !now.ok || !sameRules(now.policy, loaded);
      if (changed) {
        now = { ok: true, policy: loaded };
        lastProblem = undefined;
        events.reloaded?.(loaded);
      }
      return now;
    }
    // A file that cannot even be stat'ed is read again next time; one that parsed badly waits for an edit.
    if (version === 'unreadable') seen = undefined;
    now = { ok: false, file, version, problem };
    if (problem !== lastProblem) events.broken?.(problem, file);
    lastProblem = problem;
    return now;
  };

  return {
    current() {
      inFlight ??= refresh().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
  };
}

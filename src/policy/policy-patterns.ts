// The patterns of a policy rule (tool globs, `glob` and `regex` predicates) as they are checked at load and
// matched against a call: every one on RE2, in time linear in the text the model sent.
import type { PolicyRule } from '../core/policy-rule.js';
import { globToRe2, hasGlobSyntax } from '../patterns/glob-to-re2.js';
import { PatternUndecidableError, re2Match, re2Problem } from '../patterns/re2-match.js';

export { PatternUndecidableError } from '../patterns/re2-match.js';

/** Whether all of `text` matches the glob. Throws PatternUndecidableError (text too long, glob refused). */
export function globMatches(glob: string, text: string): boolean {
  const translated = globToRe2(glob);
  if (!translated.ok) throw new PatternUndecidableError(`the glob is refused (${translated.problem})`);
  return re2Match(translated.source, text);
}

/** Whether all of `text` matches the regex (anchored for the author). Throws PatternUndecidableError. */
export function regexMatches(regex: string, text: string): boolean {
  return re2Match(regex, text);
}

/** A tool pattern: `*`, an exact name or a glob (`mcp__<server>` is the caller's). */
export function toolGlobMatches(pattern: string, name: string): boolean {
  if (pattern === '*' || pattern === name) return true;
  return hasGlobSyntax(pattern) && globMatches(pattern, name);
}

export interface PatternProblem {
  readonly rule: string;
  /** Where in the file, as a zod issue path. */
  readonly path: readonly (string | number)[];
  readonly problem: string;
}

const NO_BACKTRACKING = 'policy patterns run on RE2, which has no lookahead, lookbehind or backreferences';

/** The first pattern of these rules that cannot be matched (refused glob syntax, or RE2 cannot run it). */
export function firstPatternProblem(rules: readonly PolicyRule[]): PatternProblem | undefined {
  for (const [i, rule] of rules.entries()) {
    const tools = [rule.tool].flat();
    for (const [j, pattern] of tools.entries()) {
      // Every one, not only those with wildcards: `@(a|b)` is refused, not taken for a tool's name.
      const problem = globProblem(pattern);
      if (problem !== undefined)
        return { rule: rule.id, path: ['rules', i, 'tool', ...(Array.isArray(rule.tool) ? [j] : [])], problem };
    }
    for (const [k, predicate] of (rule.when ?? []).entries()) {
      const where = ['rules', i, 'when', k];
      if (predicate.glob !== undefined) {
        const problem = globProblem(predicate.glob);
        if (problem !== undefined) return { rule: rule.id, path: [...where, 'glob'], problem };
      }
      if (predicate.regex !== undefined) {
        const problem = re2Problem(predicate.regex);
        if (problem !== undefined)
          return {
            rule: rule.id,
            path: [...where, 'regex'],
            problem: `RE2 cannot run this regular expression (${problem}): ${NO_BACKTRACKING}`,
          };
      }
    }
  }
  return undefined;
}

function globProblem(glob: string): string | undefined {
  const translated = globToRe2(glob);
  if (!translated.ok) return `unsupported glob: ${translated.problem}`;
  const problem = re2Problem(translated.source);
  return problem === undefined ? undefined : `RE2 cannot run this glob (${problem})`;
}

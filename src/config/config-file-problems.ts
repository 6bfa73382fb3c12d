// How a configuration file's problems are said: one line naming the line and column of a JSON syntax
// error, and the path and problem of the first schema issue (shared by mcp.json and policy.json).
import { parse as parseTolerantly, type ParseError } from 'jsonc-parser';
import type { z } from 'zod';

/** A zod issue as one short phrase ("unknown key \"x\"", "expected string", "required"). */
export function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unknown key ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  if (issue.code === 'invalid_key') return issue.issues[0]?.message ?? 'invalid key';
  if (issue.code === 'invalid_type' && issue.message.startsWith('Invalid input')) {
    return issue.input === undefined
      ? 'required'
      : `expected ${issue.expected === 'record' ? 'object' : issue.expected}`;
  }
  if (issue.code === 'invalid_value') return `expected ${issue.values.map((v) => JSON.stringify(v)).join(' or ')}`;
  return issue.message;
}

export function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((key, i) =>
      typeof key === 'number'
        ? `[${key}]`
        : /^[A-Za-z0-9_-]+$/.test(String(key))
          ? `${i ? '.' : ''}${String(key)}`
          : `[${JSON.stringify(String(key))}]`,
    )
    .join('');
}

// Node 20 reports a character offset ("at position 12"), newer Nodes add a line; say line:column either way.
// For an unexpected token V8 gives no offset but quotes the text, newlines and all: the offset then comes
// from a second, tolerant parser that reports where it stopped, and the quote is left out.
export function jsonProblem(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const where = (offset: number) => {
    const before = text.slice(0, offset);
    const line = before.split('\n').length;
    return `line ${line}, column ${offset - before.lastIndexOf('\n')}`;
  };
  const position = /\s*at position (\d+)(?: \(line \d+ column \d+\))?/.exec(message);
  if (position !== null) return message.replace(position[0], ` at ${where(Number(position[1]))}`);
  if (/end of JSON input/.test(message)) return `${message} at ${where(text.length)}`;
  const what =
    /^([\s\S]*?), (?:\.\.\.)?"[\s\S]*"(?:\.\.\.)? is not valid JSON$/.exec(message)?.[1] ??
    message.split('\n')[0] ??
    message;
  const errors: ParseError[] = [];
  parseTolerantly(text, errors, { disallowComments: true, allowTrailingComma: false });
  return errors[0] !== undefined ? `${what} at ${where(errors[0].offset)}` : what;
}

/**
 * A configuration file's text as JSON, or the one problem with it: empty, not JSON (with line and column),
 * or an own `__proto__` key, which survives JSON.parse but zod drops: an entry would vanish without a word.
 */
export function parseConfigJson(
  text: string,
): { readonly ok: true; readonly json: unknown } | { readonly ok: false; readonly problem: string } {
  const source = text.replace(/^\uFEFF/, '');
  if (source.trim() === '') return { ok: false, problem: 'the file is empty' };
  let json: unknown;
  let proto = false;
  try {
    json = JSON.parse(source, (key, value: unknown) => ((proto ||= key === '__proto__'), value));
  } catch (error) {
    return { ok: false, problem: `not valid JSON: ${jsonProblem(source, error)}` };
  }
  return proto ? { ok: false, problem: 'a "__proto__" key is not allowed' } : { ok: true, json };
}

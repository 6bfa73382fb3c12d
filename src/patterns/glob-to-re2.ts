// A glob as a whole-string RE2 pattern (re2-match.ts runs it): `*` any run of characters (in a path glob, of one
// segment), `?` one character but `/`, `[...]` one of a set, `{a,b}` alternatives, `\` escapes. Written here,
// not taken from a glob library, because those compile to backtracking regexes, and the model chooses both
// the globs (the `glob` and `grep` tools) and the texts (a policy's arguments; a workspace's file names).

export type GlobTranslation =
  { readonly ok: true; readonly source: string } | { readonly ok: false; readonly problem: string };

/** Characters that make a pattern more than a literal name (a tool pattern without them is compared as is). */
const SPECIAL = /[*?[{\\]/;

export function hasGlobSyntax(pattern: string): boolean {
  return SPECIAL.test(pattern);
}

const POSIX_CLASSES = new Set([
  'alnum',
  'alpha',
  'ascii',
  'blank',
  'cntrl',
  'digit',
  'graph',
  'lower',
  'print',
  'punct',
  'space',
  'upper',
  'word',
  'xdigit',
]);

export interface GlobDialect {
  /**
   * A path glob (the `glob` and `grep` tools): `*`, and a `**` that is not a whole segment, stay within one
   * path segment, as in a shell. Otherwise (a policy's globs) `*` runs across `/` too.
   */
  readonly paths?: boolean;
}

class Refused extends Error {}

/** `glob` as an RE2 source (JavaScript syntax), or why it is refused. */
export function globToRe2(glob: string, dialect: GlobDialect = {}): GlobTranslation {
  if (glob.startsWith('!'))
    return { ok: false, problem: 'a leading "!" (negating the glob) is not supported: order the rules instead' };
  try {
    return { ok: true, source: translate(Array.from(glob), dialect.paths === true) };
  } catch (error) {
    if (error instanceof Refused) return { ok: false, problem: error.message };
    throw error;
  }
}

/** A code point as an RE2 literal: letters and digits as they are, anything else by its number. */
function literal(char: string): string {
  return /^[A-Za-z0-9_]$/.test(char) ? char : `\\x{${(char.codePointAt(0) ?? 0).toString(16)}}`;
}

function translate(chars: readonly string[], paths: boolean): string {
  let out = '';
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] as string;
    const next = chars[i + 1];
    if ('?*+@!'.includes(c) && next === '(') refuseExtglob(c);
    if (c === '\\') {
      // A trailing backslash stands for itself.
      out += literal(next ?? '\\');
      i++;
    } else if (c === '/' && globstarAt(chars, i + 1, paths) === chars.length) {
      // `dir/**` is `dir` too.
      out += '(?:/(?s:.*))?';
      break;
    } else if (c === '*') {
      const start = i;
      while (chars[i + 1] === '*') i++;
      if (chars[i + 1] === '(') refuseExtglob(c);
      // In a path glob, only `**` is a globstar (`***` is one segment's `*`, as picomatch reads it).
      const globstar = (start === 0 || chars[start - 1] === '/') && (paths ? i === start + 1 : i > start);
      // `**/` as a whole segment is any number of directories, none included (`**/*.ts` is `a.ts` too).
      if (globstar && chars[i + 1] === '/') {
        out += '(?:(?s:.*)/)?';
        i++;
      } else if (!paths || (globstar && i + 1 === chars.length)) {
        out += '(?s:.*)';
      } else {
        out += '[^/]*';
      }
    } else if (c === '?') {
      out += '[^/]';
    } else if (c === '[') {
      const set = bracket(chars, i);
      if (set === undefined) out += literal(c);
      else {
        out += set.source;
        i = set.end;
      }
    } else if (c === '{') {
      const braces = alternatives(chars, i);
      if (braces === undefined) out += literal(c);
      else {
        out += `(?:${braces.options.map((option) => translate(option, paths)).join('|')})`;
        i = braces.end;
      }
    } else {
      out += literal(c);
    }
  }
  return out;
}

/** Where a `**` segment starting at `at` ends (the index after it), or -1 when there is none. */
function globstarAt(chars: readonly string[], at: number, paths: boolean): number {
  let end = at;
  while (chars[end] === '*') end++;
  const stars = end - at;
  return (paths ? stars === 2 : stars >= 2) && (end === chars.length || chars[end] === '/') ? end : -1;
}

function refuseExtglob(c: string): never {
  throw new Refused(`extended glob patterns like "${c}(...)" are not supported (escape it as "\\${c}(")`);
}

/** `[...]` starting at `start`: its RE2 class and the index of its `]`; undefined when it does not close. */
function bracket(chars: readonly string[], start: number): { source: string; end: number } | undefined {
  let i = start + 1;
  const negated = chars[i] === '!' || chars[i] === '^';
  if (negated) i++;
  let items = '';
  let first = true;
  for (; i < chars.length; i++, first = false) {
    const c = chars[i] as string;
    if (c === ']' && !first) {
      // A negated set never matches "/", as `?` does not.
      return { source: `[${negated ? '^' : ''}${items}${negated ? '/' : ''}]`, end: i };
    }
    if (c === '[' && chars[i + 1] === ':') {
      const close = chars.indexOf(':', i + 2);
      if (close !== -1 && chars[close + 1] === ']') {
        const name = chars.slice(i + 2, close).join('');
        if (!POSIX_CLASSES.has(name)) throw new Refused(`"[:${name}:]" is not a character class`);
        items += `[:${name}:]`;
        i = close + 1;
        continue;
      }
    }
    let from = c;
    if (c === '\\' && i + 1 < chars.length) from = chars[++i] as string;
    if (chars[i + 1] === '-' && i + 2 < chars.length && chars[i + 2] !== ']') {
      i += 2;
      let to = chars[i] as string;
      if (to === '\\' && i + 1 < chars.length) to = chars[++i] as string;
      if ((from.codePointAt(0) ?? 0) > (to.codePointAt(0) ?? 0))
        throw new Refused(`the range "${from}-${to}" runs backwards`);
      items += `${literal(from)}-${literal(to)}`;
    } else {
      items += literal(from);
    }
  }
  return undefined;
}

/** `{a,b,...}` starting at `start`: its options and the index of its `}`; undefined when it is no list. */
function alternatives(chars: readonly string[], start: number): { options: string[][]; end: number } | undefined {
  const options: string[][] = [];
  let option: string[] = [];
  let depth = 0;
  for (let i = start + 1; i < chars.length; i++) {
    const c = chars[i] as string;
    if (c === '\\') {
      option.push(c, ...(i + 1 < chars.length ? [chars[++i] as string] : []));
      continue;
    }
    if (c === '{') depth++;
    if (c === '}' && depth-- === 0) {
      if (options.length === 0) {
        if (/^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(\.\.-?\d+)?$/.test(option.join('')))
          throw new Refused(`brace ranges like "{${option.join('')}}" are not supported: list the options`);
        return undefined;
      }
      options.push(option);
      return { options, end: i };
    }
    if (c === ',' && depth === 0) {
      options.push(option);
      option = [];
      continue;
    }
    option.push(c);
  }
  return undefined;
}

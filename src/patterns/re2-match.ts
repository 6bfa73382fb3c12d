// The one engine the worker runs untrusted patterns on (a policy file's regexes and globs, and the `grep` and
// `glob` tools' patterns, globs via glob-to-re2.ts): RE2, through re2-wasm (WebAssembly, no native build). RE2
// matches in time linear in the text, so no pattern and no text the model chooses can stall the worker.
import { createRequire } from 'node:module';
import { dirname, sep } from 'node:path';
import type { RE2 } from 're2-wasm';
import { DhError } from '../core/errors.js';

/**
 * The longest text (UTF-16 code units) a pattern is matched against. Linear time still grows with the
 * text, and re2-wasm copies it into a fixed 16 MiB heap: a longer text is not matched (a policy rule that
 * would have to cannot decide, and the call asks; `grep` matches a longer line's first that many).
 */
export const MAX_MATCHED_LENGTH = 65_536;

/** Compiled patterns kept; beyond it the least recently used is freed (its WASM memory with it). */
const CACHED_PATTERNS = 128;

/** A pattern cannot say whether it matches a text: the text is too long, or RE2 cannot run the pattern. */
export class PatternUndecidableError extends DhError {
  constructor(problem: string) {
    super('PATTERN_UNDECIDABLE', problem);
  }
}

const require = createRequire(import.meta.url);
/** What an aborting WebAssembly instance throws (Node's global; this project's TypeScript libs do not type it). */
const WasmRuntimeError = (globalThis as unknown as { WebAssembly: { RuntimeError: ErrorConstructor } }).WebAssembly
  .RuntimeError;

/** How a pattern runs: on the whole text (the default, as the policy wants) or anywhere in it, as `grep` does. */
export interface Re2Mode {
  readonly anywhere?: boolean;
  readonly ignoreCase?: boolean;
  /** `^` and `$` match at each line's start and end too (the `m` flag), as when `grep` tries a block of lines. */
  readonly multiline?: boolean;
}

type Compiled = { readonly ok: true; readonly re: RE2 } | { readonly ok: false; readonly problem: string };

interface Engine {
  readonly RE2: typeof RE2;
  /** Mode and source → compiled or why not, least recently used first. */
  readonly compiled: Map<string, Compiled>;
}

let engine: Engine | undefined;

function currentEngine(): Engine {
  engine ??= { RE2: (require('re2-wasm') as { RE2: typeof RE2 }).RE2, compiled: new Map() };
  return engine;
}

// re2-wasm aborts when its fixed heap runs out (a WebAssembly.RuntimeError), and an aborted instance is
// in no state to match again. Forgetting the module makes the next require instantiate a fresh one, with
// an empty heap; the old instance and everything compiled in it are garbage then.
function discardEngine(): void {
  const root = `${dirname(require.resolve('re2-wasm/package.json'))}${sep}`;
  for (const key of Object.keys(require.cache)) if (key.startsWith(root)) delete require.cache[key];
  engine = undefined;
}

// An RE2 object's C++ side lives in the WASM heap until deleted; re2-wasm 1.0.2 (pinned) keeps it as the
// embind handle `wrapper` and never frees it itself.
function free(re: RE2): void {
  const { wrapper } = re as unknown as { wrapper?: { delete?: () => void } };
  wrapper?.delete?.();
}

function build(e: Engine, source: string, mode: Re2Mode): Compiled {
  const flags = `${mode.ignoreCase === true ? 'i' : ''}${mode.multiline === true ? 'm' : ''}u`;
  try {
    if (mode.anywhere === true) return { ok: true, re: new e.RE2(source, flags) };
    // Alone first: a source that compiles by itself cannot close the anchoring group around it.
    free(new e.RE2(source, flags));
    return { ok: true, re: new e.RE2(`^(?:${source})$`, flags) };
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return { ok: false, problem: error.message.replace(/^Invalid regular expression: \/.*\/[im]*u: /s, '') };
  }
}

/** The compiled pattern for `source` in `mode`, from the cache or built (and cached) now. */
function compile(e: Engine, source: string, mode: Re2Mode): Compiled {
  const flags = `${mode.ignoreCase === true ? 'i' : ''}${mode.multiline === true ? 'm' : ''}`;
  const key = `${mode.anywhere === true ? 'anywhere' : 'whole'}/${flags}:${source}`;
  const cached = e.compiled.get(key);
  if (cached !== undefined) {
    e.compiled.delete(key);
    e.compiled.set(key, cached);
    return cached;
  }
  const compiled = build(e, source, mode);
  e.compiled.set(key, compiled);
  for (const [key, old] of e.compiled) {
    if (e.compiled.size <= CACHED_PATTERNS) break;
    e.compiled.delete(key);
    if (old.ok) free(old.re);
  }
  return compiled;
}

/** Runs `use` on the engine; an abort costs the instance, and `use` is tried once more on a fresh one. */
function withEngine<T>(use: (e: Engine) => T): T {
  try {
    return use(currentEngine());
  } catch (error) {
    if (!(error instanceof WasmRuntimeError)) throw error;
    discardEngine();
    try {
      return use(currentEngine());
    } catch (again) {
      if (!(again instanceof WasmRuntimeError)) throw again;
      discardEngine();
      throw new PatternUndecidableError('the pattern engine ran out of memory');
    }
  }
}

/** Why RE2 cannot run `source` (JavaScript syntax, the `u` flag) in `mode`, or undefined. */
export function re2Problem(source: string, mode: Re2Mode = {}): string | undefined {
  try {
    const compiled = withEngine((e) => compile(e, source, mode));
    return compiled.ok ? undefined : compiled.problem;
  } catch (error) {
    if (error instanceof PatternUndecidableError) return error.message;
    throw error;
  }
}

/**
 * Whether all of `text` matches `source`. Throws PatternUndecidableError when the text is longer than
 * `maxLength` or RE2 cannot run the pattern: the caller decides what no answer means (fail closed).
 */
export function re2Match(source: string, text: string, maxLength: number = MAX_MATCHED_LENGTH): boolean {
  return run(source, {}, text, maxLength);
}

/** Whether `source` matches somewhere in `text`; throws PatternUndecidableError as re2Match does. */
export function re2Search(
  source: string,
  text: string,
  options: Omit<Re2Mode, 'anywhere'> & { readonly maxLength?: number } = {},
): boolean {
  const { maxLength, ...mode } = options;
  return run(source, { ...mode, anywhere: true }, text, maxLength);
}

function run(source: string, mode: Re2Mode, text: string, maxLength: number = MAX_MATCHED_LENGTH): boolean {
  if (text.length > maxLength)
    throw new PatternUndecidableError(
      `the text is ${text.length} characters long, over the ${maxLength} a pattern is matched against`,
    );
  // A lone surrogate would reach RE2 as invalid UTF-8, which no `.` matches: judge the text as a program
  // receiving it would see it, with U+FFFD in its place.
  const wellFormed = (text as string & { toWellFormed(): string }).toWellFormed();
  return withEngine((e) => {
    const compiled = compile(e, source, mode);
    if (!compiled.ok) throw new PatternUndecidableError(`RE2 cannot run the pattern (${compiled.problem})`);
    return compiled.re.test(wellFormed);
  });
}

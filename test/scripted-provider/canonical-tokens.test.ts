// The tokenizer behind usage and the cache simulation stays linear on a long run of one character
// (issue 14, smaller defects: BPE merging one giant pre-token is quadratic in gpt-tokenizer, and a
// 262,144-character single-letter message took minutes), while ordinary text tokenizes exactly as
// gpt-tokenizer's own `encode`. No timing is asserted: the 20 s test timeouts are what the quadratic
// version blows (30 s to minutes for 262,144 characters; well under a second now).
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { describe, expect, it } from 'vitest';
import { canonicalInput, MAX_PRETOKEN_CHARS, tokenize } from '../../src/providers/canonical-tokens.js';
import { ChatCompletion } from '../../src/scripted-provider/chat-completion-response.js';
import { post, useProvider, user } from './helpers.js';

const LONG = 262_144;
const encodeAll = (text: string) => encode(text, { disallowedSpecial: new Set<string>() });

const PROSE = `The harness keeps every conversation in a durable workflow. When the model answers, the reply is
recorded before the next request is built, so a crash between two requests loses nothing: the worker
that picks the session up again replays the history and continues where the previous one stopped.
Costs are tracked per turn; the cache simulation reports which part of each prompt a provider would
have served from its prefix cache, which is why the tokenizer must count the same text the same way
every time, and why appending a message must extend the token sequence instead of changing it. Don't
worry about punctuation -- "quotes", (parentheses), and numbers like 1,234,567.89 are ordinary text.
`.repeat(3);

const CODE = `export function tokenCount(text: string): number {
  const tokens = tokenize(text);
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i]! < 0) throw new RangeError(\`bad token at \${i}: \${tokens[i]}\`);
  }
  return tokens.length; // o200k_base
}
const table = { alpha: 1, beta: [2, 3], gamma: { delta: 'x'.repeat(4) } } satisfies Record<string, unknown>;
`.repeat(8);

/** A deterministic string of lowercase letters: one pre-token of `length` characters. */
function lowercase(length: number): string {
  let seed = 7;
  let out = '';
  for (let i = 0; i < length; i++) {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    out += String.fromCharCode(97 + ((seed >>> 16) % 26));
  }
  return out;
}

describe('tokenize', () => {
  it('ordinary prose and code: exactly gpt-tokenizer’s tokens', () => {
    for (const text of [PROSE, CODE, `${PROSE}\n${CODE}`]) {
      expect(text.length).toBeGreaterThan(MAX_PRETOKEN_CHARS);
      expect(tokenize(text)).toEqual(encodeAll(text));
    }
  });

  it('a long run changes nothing around it: prose before and after keep their exact tokens', () => {
    const run = 'z'.repeat(5 * MAX_PRETOKEN_CHARS + 3);
    const text = `${PROSE}\n${run}\n${CODE}`;
    expect(tokenize(text)).toEqual([...encodeAll(`${PROSE}\n`), ...tokenize(run), ...encodeAll(`\n${CODE}`)]);
  });

  it('random text around long runs: exactly gpt-tokenizer’s tokens where the pieces align', () => {
    // Runs whose pieces tokenize as the whole run does (64-dash and 8-'a' tokens; 1024 is a multiple of
    // both), each between neighbours that do not join its pre-token, among fragments that exercise the
    // boundaries (blanks before a run, line breaks, digits, contractions, non-ASCII).
    const fragments = [
      'word',
      'Word',
      ' ',
      '  ',
      '\t',
      '\t\t',
      '\n',
      '\r\n',
      '\u00a0',
      '\u3000',
      '123',
      '.',
      "'s",
      '(',
      'é',
      '😀',
    ];
    const runs: [run: string, before: string[], after: string[]][] = [
      [
        '-'.repeat(4 * MAX_PRETOKEN_CHARS),
        ['\t', '\t\t', ' \t', '\u00a0\u00a0', '\u3000', '  \u3000', 'word', '4', '\n', '\t\n\t', '\r\n  \t'],
        ['x', 'word', ' word', '\t', '4', '  '],
      ],
      ['a'.repeat(4 * MAX_PRETOKEN_CHARS), ['4', '\n', '\t\n', '  \n', '\r\n'], ['4', ' ', '\t', '.', '(', '\n']],
    ];
    let seed = 3;
    const pick = <T>(items: readonly T[]): T => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return items[(seed >>> 16) % items.length]!;
    };
    for (let i = 0; i < 200; i++) {
      let text = '';
      for (let part = 0; part < 20; part++) {
        if (pick([0, 1, 2, 3, 4]) > 0) {
          text += pick(fragments);
        } else {
          const [run, before, after] = pick(runs);
          text += `${pick(before)}${run}${pick(after)}`;
        }
      }
      expect(tokenize(text), JSON.stringify(text.replace(/(.)\1{20,}/gu, (m, c) => `<${c}×${m.length}>`))).toEqual(
        encodeAll(text),
      );
    }
  });

  it('long runs count as gpt-tokenizer counts them, or within 1%', () => {
    // Sizes gpt-tokenizer itself still encodes in a fraction of a second.
    for (const text of ['a'.repeat(16_384), `(${'-'.repeat(9_000)})`, ' '.repeat(9_000), '😀'.repeat(4_000)]) {
      expect(tokenize(text).length).toBe(encodeAll(text).length);
    }
    const letters = lowercase(16_384);
    expect(Math.abs(tokenize(letters).length / encodeAll(letters).length - 1)).toBeLessThan(0.01);
  });

  it(`a ${LONG}-character single-letter message: positive, deterministic, n/8 tokens`, () => {
    const text = 'a'.repeat(LONG);
    // o200k merges a run of 'a' into 8-letter tokens; the whole-string encode (30 s) gives 32768 too.
    expect(tokenize(text).length).toBe(LONG / 8);
    // Computed again (a different string, so not the memo): the same tokens for the run.
    expect(tokenize(`${text}\n`)).toEqual([...tokenize(text), ...encodeAll('\n')]);
    const input = canonicalInput({ model: 'm', messages: [user(text)] }).tokens;
    expect(input.length).toBeGreaterThan(LONG / 8);
    expect(input.length).toBeLessThan(LONG / 8 + 10);
  }, 20_000);

  it(`a ${LONG}-character run of distinct lowercase letters is tokenized too`, () => {
    const count = tokenize(lowercase(LONG)).length;
    expect(count).toBeGreaterThan(LONG / 4);
    expect(count).toBeLessThan(LONG);
  }, 20_000);
});

describe('the running provider', () => {
  it(`answers a ${LONG}-character single-letter user message with usage`, async () => {
    const provider = await useProvider({ cache: 'deepseek', replies: [{ text: 'Many b.' }] });
    // 'b', not 'a': a text the tests above tokenized would come from the memo.
    const messages = [user('b'.repeat(LONG))];
    const res = await post(provider, { model: 'deepseek-chat', messages });
    expect(res.status).toBe(200);
    const body = ChatCompletion.parse(await res.json());
    expect(body.choices[0]?.message.content).toBe('Many b.');
    const promptTokens = canonicalInput({ model: 'deepseek-chat', messages }).tokens.length;
    expect(body.usage).toMatchObject({
      prompt_tokens: promptTokens,
      prompt_cache_hit_tokens: 0,
      prompt_cache_miss_tokens: promptTokens,
    });
    expect(promptTokens).toBeGreaterThan(LONG / 8);
  }, 20_000);
});

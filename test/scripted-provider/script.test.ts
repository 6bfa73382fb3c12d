// Script files: the examples load, defaults are filled in, and bad files fail with errors that name
// the file and the JSON path (or YAML line) of the first problem.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadScript, parseScript, ScriptError, ScriptErrorCode } from '../../src/scripted-provider/script.js';
import { ChatCompletion } from '../../src/scripted-provider/chat-completion-response.js';
import { startScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { post, useProvider, user } from './helpers.js';

function scriptFile(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'dh-script-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

function caught(fn: () => unknown): ScriptError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ScriptError);
    return error as ScriptError;
  }
  throw new Error('expected a ScriptError');
}

describe('loading scripts', () => {
  it('loads the example scripts', () => {
    const hello = loadScript('examples/scripts/hello.yaml');
    expect(hello.models).toEqual(['deepseek-chat', 'deepseek-reasoner']);
    expect(hello.replies[0]?.text).toMatch(/^Hello/);
    const tools = loadScript('examples/scripts/tools.yaml');
    expect(tools.replies[0]?.toolCalls?.[0]).toEqual({
      id: 'call_read_1',
      name: 'read_file',
      arguments: '{"path":"a.txt"}',
    });
  });

  it('loads JSON and fills in every default', () => {
    const file = scriptFile('s.json', JSON.stringify({ replies: [{ text: 'hi' }] }));
    expect(loadScript(file)).toEqual({
      models: ['deepseek-chat', 'deepseek-reasoner'],
      cache: 'deepseek',
      mode: 'ordered',
      reasoningPassBack: 'current-turn',
      retries: 'new-reply',
      replies: [{ text: 'hi', delayMs: 0, chunkDelayMs: 0, chunkSize: 8, usageEveryChunk: false, repeat: 1 }],
    });
  });

  it('serializes object tool-call arguments', () => {
    const script = parseScript({ replies: [{ toolCalls: [{ id: 'c', name: 'f', arguments: { a: [1, 'x'] } }] }] });
    expect(script.replies[0]?.toolCalls?.[0]?.arguments).toBe('{"a":[1,"x"]}');
  });

  it('names the file and the line of a YAML syntax error', () => {
    const file = scriptFile('bad.yaml', 'replies:\n  - text: "unterminated\n  - text: ok\n');
    const error = caught(() => loadScript(file));
    expect(error.code).toBe(ScriptErrorCode.Invalid);
    expect(error.message).toContain(file);
    expect(error.message).toMatch(/invalid YAML at line \d+, column \d+/);
  });

  it('names the file and the JSON path of the first schema violation', () => {
    const file = scriptFile(
      'bad-schema.yaml',
      'replies:\n  - text: fine\n  - text: broken\n    fault: { kind: explode }\n',
    );
    const error = caught(() => loadScript(file));
    expect(error.code).toBe(ScriptErrorCode.Invalid);
    expect(error.message).toContain(file);
    expect(error.message).toContain('$.replies[1].fault.kind');
    expect(error.details.path).toBe('$.replies[1].fault.kind');
  });

  it('rejects unknown keys, bad values and match in ordered mode', () => {
    expect(caught(() => parseScript({ replies: [{ txt: 'typo' }] })).message).toContain('$.replies[0]');
    expect(caught(() => parseScript({ cache: 'redis', replies: [] })).message).toContain('$.cache');
    expect(caught(() => parseScript({ replies: [{ chunkSize: 0 }] })).message).toContain('$.replies[0].chunkSize');
    expect(caught(() => parseScript({ replies: [{ text: 'x', match: { lastUserContains: 'y' } }] })).message).toContain(
      '$.replies[0].match',
    );
    const dup = caught(() =>
      parseScript({
        replies: [
          {
            toolCalls: [
              { id: 'c', name: 'f', arguments: '{}' },
              { id: 'c', name: 'g', arguments: '{}' },
            ],
          },
        ],
      }),
    );
    expect(dup.message).toContain('$.replies[0].toolCalls[1].id');
  });

  it('rejects an invalid JSON file, an unknown extension and a missing file', () => {
    expect(caught(() => loadScript(scriptFile('bad.json', '{"replies": [}'))).message).toMatch(/invalid JSON/);
    expect(caught(() => loadScript(scriptFile('s.txt', 'replies: []'))).message).toMatch(/unknown script format/);
    const missing = caught(() => loadScript('/nonexistent/script.yaml'));
    expect(missing.code).toBe(ScriptErrorCode.Unreadable);
    expect(missing.message).toContain('/nonexistent/script.yaml');
  });

  it('makes startScriptedProvider reject a bad script before listening', async () => {
    const file = scriptFile('bad.yaml', 'replies: [{ repeat: -1 }]\n');
    await expect(startScriptedProvider({ script: file })).rejects.toThrow(/\$\.replies\[0\]\.repeat/);
  });
});

describe('retries: same-reply', () => {
  const answer = async (provider: Awaited<ReturnType<typeof useProvider>>, content: string) => {
    const res = await post(provider, { model: 'deepseek-chat', messages: [user(content)] });
    if (res.status !== 200) return `${res.status}`;
    return ChatCompletion.parse(await res.json()).choices[0]?.message.content ?? '';
  };

  it('answers a request equal to an answered one as before, using no reply; a fault is not kept', async () => {
    const provider = await useProvider({
      retries: 'same-reply',
      replies: [{ text: 'one' }, { fault: { kind: 'server-error' } }, { text: 'two' }, { text: 'three' }],
    });
    expect(await answer(provider, 'a')).toBe('one');
    expect(await answer(provider, 'a')).toBe('one');
    expect(await answer(provider, 'b')).toBe('500');
    expect(await answer(provider, 'b')).toBe('two'); // sent again after the fault: the next reply
    expect(await answer(provider, 'b')).toBe('two');
    expect(await answer(provider, 'c')).toBe('three');
    expect(provider.stats()).toMatchObject({ repliesUsed: 4, repliesRemaining: 0, repeatedRequests: 2 });
  });

  it('by default a request sent again takes the next reply', async () => {
    const provider = await useProvider({ replies: [{ text: 'one' }, { text: 'two' }] });
    expect(await answer(provider, 'a')).toBe('one');
    expect(await answer(provider, 'a')).toBe('two');
    expect(provider.stats().repeatedRequests).toBe(0);
  });
});

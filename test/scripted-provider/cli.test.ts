// `dh scripted-provider` as a person runs it: a real child process that prints its base URL, serves
// the example script, records to JSONL, and stops cleanly on SIGTERM.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ChatCompletion, ModelList } from '../../src/scripted-provider/chat-completion-response.js';

function run(args: string[]): {
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  exit: Promise<number | null>;
} {
  const child = spawn(process.execPath, ['bin/dh.mjs', 'scripted-provider', ...args], { stdio: 'pipe' });
  let stderr = '';
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return { child, stderr: () => stderr, exit };
}

async function firstLine(child: ChildProcessWithoutNullStreams): Promise<string> {
  const lines = createInterface({ input: child.stdout });
  for await (const line of lines) return line;
  throw new Error('no output');
}

describe('dh scripted-provider', () => {
  it('prints the base URL, serves the script and stops on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dh-cli-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const record = join(dir, 'requests.jsonl');
    const { child, stderr, exit } = run([
      '--script',
      'examples/scripts/hello.yaml',
      '--port',
      '0',
      '--record',
      record,
      '--cache',
      'openai',
    ]);
    const url = await firstLine(child);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);

    const models = ModelList.parse(await (await fetch(`${url}/models`)).json());
    expect(models.data.map((m) => m.id)).toContain('deepseek-chat');
    const res = await fetch(`${url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'deepseek-chat', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const body = ChatCompletion.parse(await res.json());
    expect(body.choices[0]?.message.content).toMatch(/^Hello!/);
    expect(body.usage?.prompt_tokens_details).toEqual({ cached_tokens: 0 });

    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(stderr()).toMatch(/stopped \(SIGTERM\): 2 request\(s\)/);
    expect(readFileSync(record, 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('fails with the script error and a non-zero exit code', async () => {
    const { stderr, exit } = run(['--script', 'examples/scripts/does-not-exist.yaml']);
    expect(await exit).toBe(1);
    expect(stderr()).toMatch(/does-not-exist\.yaml: cannot read script.*\[SCRIPT_UNREADABLE\]/);
  });

  it('rejects a bad port and an unknown cache mode', async () => {
    const badPort = run(['--script', 'examples/scripts/hello.yaml', '--port', 'http']);
    expect(await badPort.exit).not.toBe(0);
    expect(badPort.stderr()).toMatch(/port number/);
    const badCache = run(['--script', 'examples/scripts/hello.yaml', '--cache', 'redis']);
    expect(await badCache.exit).not.toBe(0);
    expect(badCache.stderr()).toMatch(/deepseek, openai, off/);
  });
});

// The web console's security model on the real stack: the bearer token off loopback (and `dh ui`
// printing a generated 0600 token once), DNS-rebinding Host checks, CSRF refusals (foreign Origin,
// non-JSON bodies), no CORS headers, files only from the app's directory, and no provider key in any answer.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ConsoleServer } from '../../src/console/console-server.js';
import { loadOrCreateUiToken } from '../../src/console/ui-token.js';
import { followupSignal } from '../../src/shared/session-messages.js';
import { liveStreamPlugin } from '../../src/streaming/live-stream-plugin.js';
import { MemoryDeltaChannel } from '../../src/streaming/memory-delta-channel.js';
import { cleanEnv, DH_BIN, REPO_ROOT } from '../cli/operator-cli.js';
import { startHarness, TEST_KEY_ENV, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { call, post, readSse, startTestConsole, type ApiAnswer } from './console-client.js';

const KEY = 'sk-console-leak-check-7f3a9c21d4e8b6051a2f';

/** A raw request, so the Host header can be anything (fetch sets it from the URL). */
function rawRequest(
  port: number,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
  body?: string,
): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const codeOf = (answer: ApiAnswer | { text: string }): string | undefined =>
  (JSON.parse(answer.text) as { error?: { code?: string } }).error?.code;

describe('web console security', () => {
  let h: Harness;
  let loopback: ConsoleServer;
  let open: ConsoleServer;
  const channel = new MemoryDeltaChannel();
  const uiRoot = mkdtempSync(join(tmpdir(), 'dh-console-ui-'));
  const uiDir = join(uiRoot, 'app');
  const previousKey = process.env[TEST_KEY_ENV];

  beforeAll(async () => {
    process.env[TEST_KEY_ENV] = KEY;
    mkdirSync(uiDir);
    writeFileSync(join(uiDir, 'index.html'), '<!doctype html><title>app</title>');
    writeFileSync(join(uiRoot, 'secret.txt'), 'outside-the-app-dir');
    symlinkSync(join(uiRoot, 'secret.txt'), join(uiDir, 'link.txt'));
    h = await startHarness({
      script: { mode: 'match', replies: [{ text: 'fine', repeat: 20 }] },
      apiKey: KEY,
      plugins: [liveStreamPlugin(channel)],
    });
    loopback = await startTestConsole(h, channel, { uiDir });
    open = await startTestConsole(h, channel, { host: '0.0.0.0', token: 'the-right-token' });
    const handle = await h.start('sec');
    await handle.signal(followupSignal, { content: 'hello' });
    await waitForTurnEnd(h.store, 'sec', 1);
  }, 90_000);
  afterAll(async () => {
    if (previousKey === undefined) delete process.env[TEST_KEY_ENV];
    else process.env[TEST_KEY_ENV] = previousKey;
    await loopback?.close();
    await open?.close();
    await h?.stop();
    rmSync(uiRoot, { recursive: true, force: true });
  });

  it('binds 127.0.0.1 by default and needs no token there', async () => {
    expect(loopback.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(loopback.requiresToken).toBe(false);
    expect((await call(loopback.url, '/api/sessions')).status).toBe(200);
  });

  it('off loopback every /api route requires the bearer token', async () => {
    const base = `http://127.0.0.1:${open.port}/`;
    expect(open.requiresToken).toBe(true);
    const missing = await call(base, '/api/sessions');
    expect(missing.status).toBe(401);
    expect(codeOf(missing)).toBe('UNAUTHORIZED');
    expect((await call(base, '/api/openapi.json')).status).toBe(401);
    expect((await call(base, '/api/sessions/sec/live')).status).toBe(401);
    expect((await post(base, '/api/sessions/sec/interrupt', {})).status).toBe(401);
    const wrong = await call(base, '/api/sessions', { headers: { authorization: 'Bearer the-wrong-token' } });
    expect(wrong.status).toBe(401);
    const right = await call(base, '/api/sessions', { headers: { authorization: 'Bearer the-right-token' } });
    expect(right.status).toBe(200);
    // The app's page is not an API route: the browser loads it, then sends the token itself.
    expect((await call(base, '/')).status).toBe(200);
  });

  it('refuses to start off loopback without a token', async () => {
    await expect(startTestConsole(h, channel, { host: '0.0.0.0', token: null })).rejects.toMatchObject({
      code: 'UI_TOKEN_REQUIRED',
    });
  });

  it('refuses a Host that is not the server or a loopback name (DNS rebinding)', async () => {
    const port = loopback.port;
    const evil = await rawRequest(port, '/api/sessions', { host: `evil.example:${port}` });
    expect(evil.status).toBe(403);
    expect(codeOf(evil)).toBe('FORBIDDEN_HOST');
    expect((await rawRequest(port, '/', { host: `rebind.attacker.test:${port}` })).status).toBe(403);
    expect((await rawRequest(port, '/api/sessions', { host: `localhost:${port + 1}` })).status).toBe(403);
    expect((await rawRequest(port, '/api/sessions', { host: `localhost:${port}` })).status).toBe(200);
    expect((await rawRequest(port, '/api/sessions', { host: `127.0.0.1:${port}` })).status).toBe(200);
  });

  it('refuses a state-changing request from another origin, or without a JSON body (CSRF)', async () => {
    const base = loopback.url;
    const foreign = await post(base, '/api/sessions/sec/interrupt', {}, { origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    expect(codeOf(foreign)).toBe('FORBIDDEN_ORIGIN');
    const plain = await call(base, '/api/sessions/sec/messages', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ kind: 'followup', content: 'sneaky' }),
    });
    expect(plain.status).toBe(415);
    expect(codeOf(plain)).toBe('UNSUPPORTED_MEDIA_TYPE');
    const form = await call(base, '/api/sessions/sec/interrupt', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=1',
    });
    expect(form.status).toBe(415);
    const own = await post(base, '/api/sessions/sec/interrupt', {}, { origin: base.replace(/\/$/, '') });
    expect(own.status).toBe(202);
    const events = await h.store.read('sec');
    expect(events.filter((e) => e.type === 'user/message')).toHaveLength(1);
  });

  it('sends no CORS headers, not even to a preflight', async () => {
    const answers = [
      await call(loopback.url, '/api/sessions', { headers: { origin: 'http://evil.example' } }),
      await call(loopback.url, '/api/sessions', {
        method: 'OPTIONS',
        headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
      }),
    ];
    for (const answer of answers) {
      for (const name of answer.headers.keys()) expect(name.startsWith('access-control-')).toBe(false);
    }
  });

  it('serves only files inside the app directory', async () => {
    const port = loopback.port;
    const host = `127.0.0.1:${port}`;
    expect((await rawRequest(port, '/', { host })).text).toContain('<title>app</title>');
    for (const path of [
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/..%2fsecret.txt',
      '/link.txt',
      '/%2e%2e%2fsecret.txt',
    ]) {
      const answer = await rawRequest(port, path, { host });
      expect(answer.text, path).not.toContain('outside-the-app-dir');
    }
    // Without a build, `/` says how to make one.
    const missing = await call(open.url.replace('0.0.0.0', '127.0.0.1'), '/');
    expect(missing.text).toContain('npm run build:ui');
  });

  it("never answers with the provider key in the worker's environment", async () => {
    const base = loopback.url;
    const answers: string[] = [];
    for (const path of [
      '/api/sessions',
      '/api/sessions/sec',
      '/api/sessions/sec/events',
      '/api/sessions/sec/timeline',
      '/api/sessions/sec/steps/1/1/request',
      '/api/openapi.json',
      '/api/sessions/nope',
      '/',
    ]) {
      const answer = await call(base, path);
      expect(answer.status, path).toBeLessThan(500);
      answers.push(answer.text);
    }
    answers.push((await post(base, '/api/sessions/sec/messages', { kind: 'followup', content: 'again' })).text);
    answers.push((await post(base, '/api/sessions/sec/messages', { kind: 'nope' })).text);
    const live = await readSse(new URL('/api/sessions/sec/live', base).toString(), (m) => m.length >= 5, {
      timeoutMs: 3_000,
    });
    answers.push(JSON.stringify(live.messages));
    expect(answers.join('\n').length).toBeGreaterThan(1000);
    for (const text of answers) expect(text).not.toContain(KEY);
    // The key is there to leak: in this process's environment (the worker's) and handed to the worker.
    expect(process.env[TEST_KEY_ENV]).toBe(KEY);
  });
});

describe('the UI token', () => {
  const home = mkdtempSync(join(tmpdir(), 'dh-ui-token-'));
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('is generated once into $DH_HOME/ui-token with mode 0600, then read back; DH_UI_TOKEN wins', () => {
    const first = loadOrCreateUiToken(home, {});
    expect(first.created).toBe(true);
    expect(first.token.length).toBeGreaterThanOrEqual(32);
    expect(statSync(join(home, 'ui-token')).mode & 0o777).toBe(0o600);
    const again = loadOrCreateUiToken(home, {});
    expect(again).toMatchObject({ created: false, token: first.token });
    expect(loadOrCreateUiToken(home, { DH_UI_TOKEN: 'from-env' })).toMatchObject({ token: 'from-env', created: false });
  });
});

describe('dh ui', () => {
  const home = mkdtempSync(join(tmpdir(), 'dh-ui-cli-'));
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(home, { recursive: true, force: true });
  });

  /** Starts `dh ui`, waits for its URL on stdout, and returns it with what stderr said so far. */
  async function startUi(
    args: readonly string[],
  ): Promise<{ url: string; stderr: () => string; stop(): Promise<number | null> }> {
    const child = spawn(process.execPath, [DH_BIN, 'ui', '--port', '0', ...args], {
      cwd: REPO_ROOT,
      env: cleanEnv({
        DH_HOME: home,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const deadline = Date.now() + 60_000;
    while (!/web console on/.test(stderr) && Date.now() < deadline && child.exitCode === null) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const url = /^(http:\/\/\S+)$/m.exec(stdout)?.[1];
    if (url === undefined) throw new Error(`dh ui did not start:\n${stdout}\n${stderr}`);
    return {
      url,
      stderr: () => stderr,
      stop: () =>
        new Promise((resolve) => {
          child.once('exit', (code) => resolve(code));
          child.kill('SIGINT');
        }),
    };
  }

  it('off loopback prints a generated token once, and the API needs it', async () => {
    const first = await startUi(['--host', '0.0.0.0']);
    const port = new URL(first.url).port;
    const base = `http://127.0.0.1:${port}/`;
    const token = /API token \(saved to [^)]*\): (\S+)/.exec(first.stderr())?.[1];
    expect(token, first.stderr()).toBeDefined();
    expect(statSync(join(home, 'ui-token')).mode & 0o777).toBe(0o600);
    expect((await call(base, '/api/sessions')).status).toBe(401);
    expect((await call(base, '/api/sessions', { headers: { authorization: `Bearer ${token ?? ''}` } })).status).toBe(
      200,
    );
    expect(await first.stop()).toBe(0);

    const second = await startUi(['--host', '0.0.0.0']);
    expect(second.stderr()).not.toContain(token ?? '<none>');
    const base2 = `http://127.0.0.1:${new URL(second.url).port}/`;
    expect((await call(base2, '/api/sessions', { headers: { authorization: `Bearer ${token ?? ''}` } })).status).toBe(
      200,
    );
    expect(await second.stop()).toBe(0);
  }, 120_000);

  it('on loopback prints its URL and needs no token', async () => {
    const ui = await startUi([]);
    expect(ui.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect((await call(ui.url, '/api/sessions')).status).toBe(200);
    expect(await ui.stop()).toBe(0);
  }, 120_000);
});

// The MCP server file as loadMcpConfig reads it from real files (defaults, order, which file, one
// INVALID_CONFIG line naming file and path) and as resolveServerLaunch expands its references.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DhError } from '../../src/core/errors.js';
import {
  loadMcpConfig,
  resolveServerLaunch,
  toolIdempotent,
  toolTimeoutMs,
  type McpServerEntry,
  referencedValues,
} from '../../src/mcp/mcp-config.js';

let home: string;
let file: string;
beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'dh-mcp-config-'));
  file = join(home, 'mcp.json');
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

async function write(content: unknown, path = file): Promise<void> {
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
}

async function load(servers: Record<string, unknown>): Promise<readonly McpServerEntry[]> {
  await write({ mcpServers: servers });
  const loaded = await loadMcpConfig({ home, env: {} });
  return loaded?.servers ?? [];
}

async function entry(server: Record<string, unknown>, name = 'srv'): Promise<McpServerEntry> {
  const [only] = await load({ [name]: server });
  if (only === undefined) throw new Error('no server loaded');
  return only;
}

function configError(run: () => unknown): DhError {
  let error: unknown;
  try {
    run();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(DhError);
  expect((error as DhError).code).toBe('INVALID_CONFIG');
  expect((error as DhError).message).not.toContain('\n');
  return error as DhError;
}

async function loadError(content: unknown, env: NodeJS.ProcessEnv = {}): Promise<DhError> {
  if (content !== undefined) await write(content);
  const error = await loadMcpConfig({ home, env }).then(
    () => undefined,
    (e: unknown) => e,
  );
  return configError(() => {
    throw error instanceof Error ? error : new Error('loaded without an error');
  });
}

const defaults = { idempotent: false, timeoutMs: 60_000, maxOutputChars: 20_000, tools: {}, disabled: false };

describe('loadMcpConfig: valid files', () => {
  it('reads a stdio server with its defaults applied', async () => {
    expect(await entry({ command: 'npx', args: ['-y', 'server'] })).toEqual({
      name: 'srv',
      command: 'npx',
      args: ['-y', 'server'],
      env: {},
      ...defaults,
    });
    expect(await entry({ command: 'srv' })).toMatchObject({ args: [], env: {} });
  });

  it('reads a streamable HTTP server, keeping ${VAR} references unexpanded and needing no variable at load', async () => {
    const server = { url: 'https://${HOST}/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } };
    expect(await entry(server, 'github')).toEqual({ name: 'github', ...server, ...defaults });
    expect(await entry({ url: 'http://127.0.0.1:3000/mcp' })).toMatchObject({ headers: {} });
  });

  it('reads every dh option, and per-tool overrides fall back to the server values', async () => {
    const server = await entry({
      command: 'fs',
      cwd: '/srv',
      env: { A: '1' },
      idempotent: true,
      timeoutMs: 5_000,
      maxOutputChars: 1_000,
      tools: { write: { idempotent: false, timeoutMs: 90_000 }, read: { timeoutMs: 1 }, list: {} },
    });
    expect(server).toMatchObject({ cwd: '/srv', env: { A: '1' }, idempotent: true, maxOutputChars: 1_000 });
    expect([toolIdempotent(server, 'write'), toolTimeoutMs(server, 'write')]).toEqual([false, 90_000]);
    expect([toolIdempotent(server, 'read'), toolTimeoutMs(server, 'read')]).toEqual([true, 1]);
    expect([toolIdempotent(server, 'list'), toolTimeoutMs(server, 'list')]).toEqual([true, 5_000]);
    // A name that is not an override, even one every object inherits, gets the server's values.
    for (const tool of ['other', 'constructor', 'toString']) {
      expect([toolIdempotent(server, tool), toolTimeoutMs(server, tool)]).toEqual([true, 5_000]);
    }
    expect(await entry({ url: 'https://a/mcp', tools: { t: { idempotent: true } } })).toMatchObject({
      tools: { t: { idempotent: true } },
    });
  });

  it('sorts servers by name in byte order, never file order, and leaves disabled ones out', async () => {
    const servers = await load({
      b: { command: 'b' },
      a_off: { command: 'x', disabled: true },
      B: { url: 'https://b/mcp' },
      a: { command: 'a', disabled: false },
      _u: { command: 'u' },
      '-d': { command: 'd' },
      '9': { command: '9' },
    });
    expect(servers.map((s) => s.name)).toEqual(['-d', '9', 'B', '_u', 'a', 'b']);
    expect(await load({})).toEqual([]);
  });

  it('ignores other top-level keys (other tools share the file shape) and a byte-order mark', async () => {
    await write({ version: 2, other: { x: 1 }, mcpServers: { a: { command: 'a' } } });
    expect((await loadMcpConfig({ home, env: {} }))?.servers.map((s) => s.name)).toEqual(['a']);
    await write('\uFEFF{"mcpServers": {"b": {"command": "b"}}}');
    expect(await loadMcpConfig({ home, env: {} })).toMatchObject({ file, servers: [{ name: 'b' }] });
  });

  it('accepts names of 1-24 letters, digits, "_" and "-"', async () => {
    const names = ['a', 'A-z_0', 'x'.repeat(24)];
    expect((await load(Object.fromEntries(names.map((n) => [n, { command: 'c' }])))).map((s) => s.name)).toEqual([
      'A-z_0',
      'a',
      'x'.repeat(24),
    ]);
  });
});

describe('loadMcpConfig: which file', () => {
  it('without <home>/mcp.json, there is no MCP', async () => {
    expect(await loadMcpConfig({ home, env: {} })).toBeUndefined();
    expect(await loadMcpConfig({ home: join(home, 'not-there'), env: {} })).toBeUndefined();
  });

  it('DH_MCP_CONFIG wins over <home>/mcp.json, and a relative one is reported absolute', async () => {
    await write({ mcpServers: { home: { command: 'h' } } });
    const other = join(home, 'elsewhere.json');
    await write({ mcpServers: { named: { command: 'n' } } }, other);
    const loaded = await loadMcpConfig({ home, env: { DH_MCP_CONFIG: other } });
    expect(loaded).toMatchObject({ file: other, servers: [{ name: 'named' }] });
    expect(loaded?.servers).toHaveLength(1);
    const fromRelative = await loadMcpConfig({ home, env: { DH_MCP_CONFIG: relative(process.cwd(), other) } });
    expect(fromRelative?.file).toBe(other);
  });

  it('a file DH_MCP_CONFIG names must exist, even when <home>/mcp.json does; an empty one is refused', async () => {
    await write({ mcpServers: {} });
    const missing = join(home, 'missing.json');
    const error = await loadError(undefined, { DH_MCP_CONFIG: missing });
    expect(error.message).toBe(`invalid MCP configuration in ${missing}: no such file (named by DH_MCP_CONFIG)`);
    expect(error.details).toEqual({ file: missing, path: '' });
    expect((await loadError(undefined, { DH_MCP_CONFIG: '' })).message).toBe(
      'invalid MCP configuration: DH_MCP_CONFIG is set but empty',
    );
  });

  it('a default file that cannot be read is an error, not "no MCP"', async () => {
    await mkdir(file);
    expect((await loadError(undefined)).message).toBe(`invalid MCP configuration in ${file}: cannot read it (EISDIR)`);
  });
});

describe('loadMcpConfig: one error naming the file and the path', () => {
  it('reports bad JSON with a line and column, an empty file, and a non-object', async () => {
    const bad = await loadError('{\n  "mcpServers": {\n    x: 1\n  }\n}');
    expect(bad.message).toMatch(
      new RegExp(`^invalid MCP configuration in ${file}: not valid JSON: .* at line 3, column 5$`),
    );
    expect((await loadError('{\n  "mcpServers": {')).message).toMatch(/not valid JSON: .* at line 2, column 18$/);
    expect((await loadError('')).message).toBe(`invalid MCP configuration in ${file}: the file is empty`);
    for (const content of ['[]', 'null', '"x"']) {
      expect((await loadError(content)).message).toBe(`invalid MCP configuration in ${file}: expected a JSON object`);
    }
    expect((await loadError('{"mcpServers": {"__proto__": {"command": "x"}}}')).message).toBe(
      `invalid MCP configuration in ${file}: a "__proto__" key is not allowed`,
    );
  });

  const TIMEOUT = 'a whole number of milliseconds from 1 to 3600000';
  const REF = 'a ${...} reference names an environment variable (letters, digits, "_"; not starting with a digit)';
  const NAME = 'a server name is 1-24 letters, digits, "_" or "-"';
  const NOT_HTTP = 'an http:// or https:// URL, e.g. https://example.com/mcp';
  const EITHER = 'a server is either stdio or streamable HTTP';
  const WS = '${workspace} needs confine: "workspace"';
  const fs = (extra: object) => ({ mcpServers: { fs: { command: 'x', ...extra } } });
  const web = (extra: object) => ({ mcpServers: { web: { url: 'https://a/mcp', ...extra } } });
  const CONFINE_HTTP = 'only a stdio server can be confined (dh does not start an HTTP server)';
  const OUTPUT = 'a whole number of characters from 1000 to 1000000';
  // [what, file content, path under mcpServers, problem]
  const cases: [string, unknown, string, string][] = [
    ['no mcpServers', { servers: {} }, '', 'required'],
    ['mcpServers not an object', { mcpServers: [] }, '', 'expected object'],
    ['a server not an object', { mcpServers: { fs: 'npx' } }, 'fs', 'expected object'],
    ['a name with a space', { mcpServers: { 'my fs': { command: 'x' } } }, '["my fs"]', NAME],
    ['a name with a dot', { mcpServers: { 'a.b': { command: 'x' } } }, '["a.b"]', NAME],
    ['a name of 25', { mcpServers: { ['x'.repeat(25)]: { command: 'x' } } }, 'x'.repeat(25), NAME],
    ['an empty name', { mcpServers: { '': { command: 'x' } } }, '[""]', NAME],
    ['a name with "__"', { mcpServers: { a__b: { command: 'x' } } }, 'a__b', 'a server name may not contain "__"'],
    ['command and url', fs({ url: 'https://a/mcp' }), 'fs', `has both "command" and "url": ${EITHER}`],
    ['neither', { mcpServers: { fs: { args: [] } } }, 'fs', `has neither "command" nor "url": ${EITHER}`],
    ['a non-string arg', fs({ args: ['a', 1] }), 'fs.args[1]', 'expected string'],
    ['args not an array', fs({ args: 'a' }), 'fs.args', 'expected array'],
    ['an empty command', fs({ command: '' }), 'fs.command', 'the program to run'],
    [
      'a reference in command',
      fs({ command: '${B}' }),
      'fs.command',
      '${...} references are expanded in args, env and cwd only',
    ],
    ['a non-string env value', fs({ env: { A: true } }), 'fs.env.A', 'expected string'],
    ['an env name with "="', fs({ env: { 'A=B': 'x' } }), 'fs.env["A=B"]', 'a variable name without "="'],
    ['a bad reference', fs({ args: ['${1X}'] }), 'fs.args[0]', REF],
    ['an empty reference', fs({ cwd: '${}' }), 'fs.cwd', REF],
    ['a bad header reference', web({ headers: { A: '${A-B}' } }), 'web.headers.A', REF],
    ['an unknown stdio key', fs({ headers: {} }), 'fs', 'unknown key "headers"'],
    ['unknown http keys', web({ args: [], cwd: '/' }), 'web', 'unknown key "args", "cwd"'],
    ['a non-http url', web({ url: 'ftp://a/mcp' }), 'web.url', NOT_HTTP],
    ['a url without a scheme', web({ url: 'localhost:8080/mcp' }), 'web.url', NOT_HTTP],
    ['another scheme, templated', web({ url: 'ws://${HOST}/mcp' }), 'web.url', NOT_HTTP],
    ['a bad header name', web({ headers: { 'X Y': 'v' } }), 'web.headers["X Y"]', 'an HTTP header name'],
    ['a non-string header', web({ headers: { A: 1 } }), 'web.headers.A', 'expected string'],
    ['confine on http', web({ confine: 'workspace' }), 'web.confine', CONFINE_HTTP],
    ['another confine', fs({ confine: 'home' }), 'fs.confine', 'expected "workspace"'],
    ['${workspace} unconfined', fs({ env: { ROOT: '${workspace}' } }), 'fs.env.ROOT', WS],
    ['${workspace} in a url', web({ url: 'https://a/${workspace}' }), 'web.url', WS],
    ['${workspace} in a header', web({ headers: { W: '${workspace}' } }), 'web.headers.W', WS],
    ['a zero timeout', fs({ timeoutMs: 0 }), 'fs.timeoutMs', TIMEOUT],
    ['a timeout over an hour', fs({ timeoutMs: 3_600_001 }), 'fs.timeoutMs', TIMEOUT],
    ['a string timeout', fs({ timeoutMs: '5000' }), 'fs.timeoutMs', TIMEOUT],
    ['a small output cap', fs({ maxOutputChars: 999 }), 'fs.maxOutputChars', OUTPUT],
    ['a large output cap', web({ maxOutputChars: 1_000_001 }), 'web.maxOutputChars', OUTPUT],
    ['a non-boolean idempotent', fs({ idempotent: 'yes' }), 'fs.idempotent', 'expected boolean'],
    ['a non-boolean disabled', fs({ disabled: 1 }), 'fs.disabled', 'expected boolean'],
    ['a fractional tool timeout', fs({ tools: { t: { timeoutMs: 1.5 } } }), 'fs.tools.t.timeoutMs', TIMEOUT],
    ['an unknown tool key', fs({ tools: { t: { maxOutputChars: 5 } } }), 'fs.tools.t', 'unknown key "maxOutputChars"'],
    ['a tool idempotent of 1', web({ tools: { t: { idempotent: 1 } } }), 'web.tools.t.idempotent', 'expected boolean'],
    ['a disabled server is still checked', fs({ disabled: true, args: 'a' }), 'fs.args', 'expected array'],
  ];
  it.each(cases)('%s', async (_, content, under, problem) => {
    const path = `mcpServers${under === '' || under.startsWith('[') ? '' : '.'}${under}`;
    const error = await loadError(content);
    expect(error.message).toBe(`invalid MCP configuration in ${file}: ${path}: ${problem}`);
    expect(error.details).toEqual({ file, path });
  });
});

describe('resolveServerLaunch', () => {
  const env = { HOME_DIR: '/home/u', TOKEN: 's3cr3t-token', HOST: 'api.example.com', EMPTY: '' };

  it('expands references in args, env values and cwd of a stdio server, leaving the command as written', async () => {
    const server = await entry({
      command: 'node',
      args: ['${HOME_DIR}/srv.js', '--token=${TOKEN}', 'plain', '${HOST}:${HOST}'],
      env: { API_TOKEN: '${TOKEN}', LITERAL: 'x', BLANK: '${EMPTY}' },
      cwd: '${HOME_DIR}/work',
    });
    expect(resolveServerLaunch(server, env)).toEqual({
      kind: 'stdio',
      command: 'node',
      args: ['/home/u/srv.js', '--token=s3cr3t-token', 'plain', 'api.example.com:api.example.com'],
      env: { API_TOKEN: 's3cr3t-token', LITERAL: 'x', BLANK: '' },
      cwd: '/home/u/work',
    });
    expect(resolveServerLaunch(await entry({ command: 'x' }), {})).toEqual({
      kind: 'stdio',
      command: 'x',
      args: [],
      env: {},
    });
  });

  it('expands references in the url and header values of an HTTP server', async () => {
    const server = await entry({ url: 'https://${HOST}/mcp', headers: { Authorization: 'Bearer ${TOKEN}' } }, 'github');
    expect(resolveServerLaunch(server, env)).toEqual({
      kind: 'http',
      url: 'https://api.example.com/mcp',
      headers: { Authorization: 'Bearer s3cr3t-token' },
    });
  });

  it('a missing variable names the server, the field path and the variable, never a value', async () => {
    const server = await entry(
      { url: 'https://${HOST}/mcp', headers: { Authorization: 'Bearer ${GITHUB_TOKEN}' } },
      'github',
    );
    const error = configError(() => resolveServerLaunch(server, env));
    expect(error.message).toBe(
      'invalid MCP configuration: server "github": mcpServers.github.headers.Authorization: ' +
        'environment variable GITHUB_TOKEN is not set',
    );
    expect(error.details).toEqual({
      server: 'github',
      path: 'mcpServers.github.headers.Authorization',
      variable: 'GITHUB_TOKEN',
    });
    for (const value of Object.values(env).filter((v) => v !== '')) expect(error.message).not.toContain(value);
    const stdio = await entry({ command: 'x', args: ['--key=${TOKEN}', '${NOPE}'] }, 'fs');
    expect(configError(() => resolveServerLaunch(stdio, env)).details).toEqual({
      server: 'fs',
      path: 'mcpServers.fs.args[1]',
      variable: 'NOPE',
    });
  });

  it('refuses a url that is no longer http(s) once expanded, without showing it', async () => {
    const server = await entry({ url: '${BASE}/mcp' }, 'web');
    expect(resolveServerLaunch(server, { BASE: 'https://a.example' })).toMatchObject({ url: 'https://a.example/mcp' });
    const port = await entry({ url: 'http://localhost:${PORT}/mcp' });
    expect(resolveServerLaunch(port, { PORT: '8080' })).toMatchObject({ url: 'http://localhost:8080/mcp' });
    const error = configError(() => resolveServerLaunch(server, { BASE: 'file:///etc/secret-path' }));
    expect(error.message).toBe(
      'invalid MCP configuration: server "web": mcpServers.web.url: not an http:// or https:// URL once its references are expanded',
    );
  });

  it("substitutes ${workspace} in args, env values and cwd of a confined server (cwd unset: the worker's)", async () => {
    const server = await entry(
      {
        command: 'fs',
        args: ['--root', '${workspace}'],
        env: { ROOT: '${workspace}/src', HOME: '${HOME_DIR}' },
        confine: 'workspace',
      },
      'fs',
    );
    expect(resolveServerLaunch(server, env, '/ws/s1')).toEqual({
      kind: 'stdio',
      command: 'fs',
      args: ['--root', '/ws/s1'],
      env: { ROOT: '/ws/s1/src', HOME: '/home/u' },
    });
    const withCwd = await entry({ command: 'fs', cwd: '${workspace}/sub', confine: 'workspace' });
    expect(resolveServerLaunch(withCwd, {}, '/ws/s2')).toMatchObject({ cwd: '/ws/s2/sub' });
  });

  it('a confined server without a workspace is refused; an unconfined one ignores the workspace', async () => {
    const confined = await entry({ command: 'fs', confine: 'workspace' }, 'fs');
    const error = configError(() => resolveServerLaunch(confined, env));
    expect(error.message).toBe(
      'invalid MCP configuration: server "fs": mcpServers.fs.confine: a confined server needs a session workspace',
    );
    expect(error.details).toEqual({ server: 'fs', path: 'mcpServers.fs.confine' });
    const shared = await entry({ command: 'fs', args: ['a'] });
    expect(resolveServerLaunch(shared, env, '/ws/s1')).toEqual({ kind: 'stdio', command: 'fs', args: ['a'], env: {} });
  });
});

describe('referencedValues', () => {
  it("is the values a server's references expand to (what dh masks in its output), longest first", async () => {
    const server = await entry(
      {
        command: 'x',
        args: ['--token', '${LONG_TOKEN}', '${workspace}'],
        env: { A: '${SHORT}', B: '${API_KEY}' },
        confine: 'workspace',
      },
      'fs',
    );
    const env = { LONG_TOKEN: 'tok-0123456789', SHORT: 'abc', API_KEY: 'key-123', UNUSED: 'not-referenced' };
    expect(referencedValues(server, env)).toEqual(['tok-0123456789', 'key-123']);
  });
});

// The worker's MCP servers, read from the ecosystem's `{ "mcpServers": { ... } }` file: validated whole at
// load (one INVALID_CONFIG line naming the file and the path), `${VAR}` references expanded only at launch.
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { DhError } from '../core/errors.js';
import { describeIssue, formatPath, parseConfigJson } from '../config/config-file-problems.js';

const CODE = 'INVALID_CONFIG';
const REFERENCE = /\$\{([^}]*)\}/g;
const WORKSPACE = 'workspace';

function references(text: string): string[] {
  return [...text.matchAll(REFERENCE)].map((m) => m[1] ?? '');
}

/** Becomes part of the model-visible `mcp__<server>__<tool>`, which providers cap at 64 characters. */
export const McpServerName = z
  .string()
  .regex(/^[a-zA-Z0-9_-]{1,24}$/, 'a server name is 1-24 letters, digits, "_" or "-"')
  // `__` separates server and tool in `mcp__<server>__<tool>`: inside a name it would make them ambiguous.
  .refine((name) => !name.includes('__'), 'a server name may not contain "__"');

// Secrets stay in the environment: the file holds `${VAR}` references, which must name a variable.
const Templated = z.string().refine((text) => references(text).every((name) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)), {
  error: 'a ${...} reference names an environment variable (letters, digits, "_"; not starting with a digit)',
});

const intRange = (min: number, max: number, what: string) => {
  const error = `a whole number of ${what} from ${min} to ${max}`;
  return z.int({ error }).min(min, { error }).max(max, { error });
};
const Timeout = intRange(1, 3_600_000, 'milliseconds');

export const McpToolOptions = z.strictObject({ idempotent: z.boolean().optional(), timeoutMs: Timeout.optional() });
export type McpToolOptions = z.infer<typeof McpToolOptions>;

const dhOptions = {
  /** false: a call whose outcome is unknown after a crash is never re-run. */
  idempotent: z.boolean().default(false),
  timeoutMs: Timeout.default(60_000),
  maxOutputChars: intRange(1_000, 1_000_000, 'characters').default(20_000),
  tools: z.record(z.string().min(1), McpToolOptions).default({}),
  disabled: z.boolean().default(false),
};

export const McpStdioServer = z.strictObject({
  command: z
    .string()
    .min(1, 'the program to run')
    .refine((c) => references(c).length === 0, { error: '${...} references are expanded in args, env and cwd only' }),
  args: z.array(Templated).default([]),
  env: z.record(z.string().regex(/^[^=\0]+$/, 'a variable name without "="'), Templated).default({}),
  cwd: Templated.optional(),
  /** One process per session workspace, which is all it sees; `${workspace}` names it in args, env and cwd. */
  confine: z.literal(WORKSPACE).optional(),
  ...dhOptions,
});
export type McpStdioServer = z.infer<typeof McpStdioServer>;

export const McpHttpServer = z.strictObject({
  // A URL with references (a port, a host, or all of it from the environment) can only be checked
  // whole once expanded, at launch; here its scheme, when written, must already be http(s).
  url: Templated.refine((url) => (references(url).length > 0 ? /^(https?:\/\/|\$\{)/.test(url) : isHttpUrl(url)), {
    error: 'an http:// or https:// URL, e.g. https://example.com/mcp',
  }),
  headers: z.record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'an HTTP header name'), Templated).default({}),
  ...dhOptions,
});
export type McpHttpServer = z.infer<typeof McpHttpServer>;

// A hand-made dispatch rather than z.union: a union's failure says "invalid input", not what is wrong.
export const McpServer = z.unknown().transform((value, ctx): McpStdioServer | McpHttpServer => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    ctx.addIssue({ code: 'custom', message: 'expected object' });
    return z.NEVER;
  }
  const has = (key: string) => Object.hasOwn(value, key);
  if (has('command') === has('url')) {
    const problem = has('command') ? 'has both "command" and "url"' : 'has neither "command" nor "url"';
    ctx.addIssue({ code: 'custom', message: `${problem}: a server is either stdio or streamable HTTP` });
    return z.NEVER;
  }
  if (has('url') && has('confine')) {
    const message = 'only a stdio server can be confined (dh does not start an HTTP server)';
    ctx.addIssue({ code: 'custom', message, path: ['confine'] });
    return z.NEVER;
  }
  const parsed = (has('command') ? McpStdioServer : McpHttpServer).safeParse(value, { reportInput: true });
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      ctx.addIssue({ code: 'custom', message: describeIssue(issue), path: issue.path });
    return z.NEVER;
  }
  const server = parsed.data;
  for (const field of templatedFields(server)) {
    // A shared (unconfined) process serves every session, so it has no one workspace to name.
    if (references(field.text).includes(WORKSPACE) && !('confine' in server && server.confine === WORKSPACE)) {
      ctx.addIssue({ code: 'custom', message: '${workspace} needs confine: "workspace"', path: field.path });
    }
  }
  return server;
});
export type McpServer = z.output<typeof McpServer>;

// A plain (stripping) object: other tools keep their own keys in the same file.
export const McpConfigFile = z.object({ mcpServers: z.record(McpServerName, McpServer) });
export type McpConfigFile = z.infer<typeof McpConfigFile>;

export type McpServerEntry = McpServer & { readonly name: string };
export interface LoadedMcpConfig {
  readonly file: string;
  /** By name in byte order (never file order, so every worker lists the same tools); disabled ones left out. */
  readonly servers: readonly McpServerEntry[];
}

export type McpServerLaunch =
  | {
      readonly kind: 'stdio';
      readonly command: string;
      readonly args: readonly string[];
      /** The server's own variables only; what else the process inherits is the launcher's choice. */
      readonly env: Readonly<Record<string, string>>;
      readonly cwd?: string;
    }
  | { readonly kind: 'http'; readonly url: string; readonly headers: Readonly<Record<string, string>> };

export function toolIdempotent(entry: McpServerEntry, toolName: string): boolean {
  return (Object.hasOwn(entry.tools, toolName) ? entry.tools[toolName]?.idempotent : undefined) ?? entry.idempotent;
}

export function toolTimeoutMs(entry: McpServerEntry, toolName: string): number {
  return (Object.hasOwn(entry.tools, toolName) ? entry.tools[toolName]?.timeoutMs : undefined) ?? entry.timeoutMs;
}

export async function loadMcpConfig(options: {
  home: string;
  env: NodeJS.ProcessEnv;
}): Promise<LoadedMcpConfig | undefined> {
  const named = options.env.DH_MCP_CONFIG;
  if (named === '') throw new DhError(CODE, 'invalid MCP configuration: DH_MCP_CONFIG is set but empty');
  const file = named !== undefined ? resolve(named) : join(options.home, 'mcp.json');
  const fail = (problem: string, path = ''): never => {
    const where = path === '' ? '' : `${path}: `;
    throw new DhError(CODE, `invalid MCP configuration in ${file}: ${where}${problem}`, { file, path });
  };
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Only the default file is optional: a file named on purpose that is not there is a mistake.
    if (code === 'ENOENT' && named === undefined) return undefined;
    return fail(code === 'ENOENT' ? 'no such file (named by DH_MCP_CONFIG)' : `cannot read it (${code ?? 'error'})`);
  }
  const read = parseConfigJson(text);
  if (!read.ok) return fail(read.problem);
  const { json } = read;
  const parsed = McpConfigFile.safeParse(json, { reportInput: true });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue === undefined || issue.path.length === 0) return fail('expected a JSON object');
    return fail(describeIssue(issue), formatPath(issue.path));
  }
  const servers = Object.entries(parsed.data.mcpServers)
    .filter(([, server]) => !server.disabled)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, server]): McpServerEntry => ({ name, ...server }));
  return { file, servers };
}

export function resolveServerLaunch(
  server: McpServerEntry,
  env: NodeJS.ProcessEnv,
  workspace?: string,
): McpServerLaunch {
  const confined = 'confine' in server && server.confine === WORKSPACE;
  const fail = (path: string, problem: string, variable?: string): never => {
    const details = { server: server.name, path, ...(variable !== undefined ? { variable } : {}) };
    throw new DhError(CODE, `invalid MCP configuration: server "${server.name}": ${path}: ${problem}`, details);
  };
  const base = `mcpServers.${server.name}`;
  if (confined && workspace === undefined) fail(`${base}.confine`, 'a confined server needs a session workspace');
  const expand = (text: string, path: (string | number)[]): string =>
    text.replace(REFERENCE, (_, name: string) => {
      const at = formatPath(['mcpServers', server.name, ...path]);
      if (name === WORKSPACE) return workspace ?? fail(at, '${workspace} needs a session workspace');
      // Never the value: it may be a secret, and this message goes to logs.
      return env[name] ?? fail(at, `environment variable ${name} is not set`, name);
    });
  const expandRecord = (record: Record<string, string>, key: string) =>
    Object.fromEntries(Object.entries(record).map(([k, v]) => [k, expand(v, [key, k])]));
  if ('command' in server) {
    // Unset, the worker's own directory (as for any server), so relative paths in args mean the same for all.
    const cwd = server.cwd !== undefined ? expand(server.cwd, ['cwd']) : undefined;
    return {
      kind: 'stdio',
      command: server.command,
      args: server.args.map((arg, i) => expand(arg, ['args', i])),
      env: expandRecord(server.env, 'env'),
      ...(cwd !== undefined ? { cwd } : {}),
    };
  }
  const url = expand(server.url, ['url']);
  if (!isHttpUrl(url)) fail(`${base}.url`, 'not an http:// or https:// URL once its references are expanded');
  return { kind: 'http', url, headers: expandRecord(server.headers, 'headers') };
}

function isHttpUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const { protocol } = new URL(text);
  return protocol === 'http:' || protocol === 'https:';
}

/** Shorter values are left alone: masking them would garble ordinary text. */
const MIN_MASKED_CHARS = 6;

/**
 * The values the server's `${VAR}` references expand to (not `${workspace}`): secrets the configuration
 * hands the server, which dh masks wherever the server's output would carry them into the log.
 */
export function referencedValues(server: McpServerEntry, env: NodeJS.ProcessEnv): string[] {
  const names = new Set(templatedFields(server).flatMap((field) => references(field.text)));
  names.delete(WORKSPACE);
  return [...names]
    .map((name) => env[name])
    .filter((value): value is string => value !== undefined && value.length >= MIN_MASKED_CHARS)
    .sort((a, b) => b.length - a.length);
}

function templatedFields(server: McpServer): { text: string; path: (string | number)[] }[] {
  const record = (r: Record<string, string>, key: string) =>
    Object.entries(r).map(([k, text]) => ({ text, path: [key, k] }));
  if ('url' in server) return [{ text: server.url, path: ['url'] }, ...record(server.headers, 'headers')];
  return [
    ...server.args.map((text, i) => ({ text, path: ['args', i] })),
    ...record(server.env, 'env'),
    ...(server.cwd !== undefined ? [{ text: server.cwd, path: ['cwd'] }] : []),
  ];
}

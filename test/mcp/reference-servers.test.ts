// Pins how the reference MCP servers (server-everything and server-filesystem 2026.8.31) behave with the
// SDK's own Client (1.32): tool names and shapes, progress, cancellation, errors, roots and a dead server.
// Our MCP client is built on these facts; a server or SDK upgrade that changes one fails here first.
import { mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client, type ClientOptions } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  ListRootsRequestSchema,
  McpError,
  type CallToolResult,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  everythingStdio,
  filesystemStdio,
  startEverythingHttp,
  type EverythingHttp,
} from '../helpers/mcp-test-servers.js';

const TEST_TIMEOUT = 60_000;
const CLIENT_INFO = { name: 'dh-reference-servers-test', version: '0.0.0' };

interface Session {
  client: Client;
  /** Everything client.onerror received. */
  errors: Error[];
  /** How often client.onclose fired. */
  closes: number;
  /** The stdio server's stderr so far. */
  stderr: string;
}

const openClients: Client[] = [];

afterEach(async () => {
  await Promise.all(openClients.splice(0).map((client) => client.close().catch(() => undefined)));
});

async function connect(transport: Transport, options?: ClientOptions, setup?: (client: Client) => void) {
  const client = new Client(CLIENT_INFO, options);
  const session: Session = { client, errors: [], closes: 0, stderr: '' };
  client.onerror = (error) => session.errors.push(error);
  client.onclose = () => {
    session.closes += 1;
  };
  if (transport instanceof StdioClientTransport) {
    transport.stderr?.on('data', (chunk: Buffer) => {
      session.stderr += chunk.toString('utf8');
    });
  }
  setup?.(client);
  openClients.push(client);
  await client.connect(transport);
  return session;
}

/** stderr 'pipe' keeps the servers' startup lines out of the test output. */
const stdioTransport = (launch: { command: string; args: string[] }) =>
  new StdioClientTransport({ ...launch, stderr: 'pipe' });

async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  options?: Parameters<Client['callTool']>[2],
): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args }, undefined, options)) as CallToolResult;
}

function texts(result: CallToolResult): string[] {
  return result.content.flatMap((part) => (part.type === 'text' ? [part.text] : []));
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Every tool server-everything lists to a client without roots, sampling or elicitation capabilities. */
const EVERYTHING_TOOLS = [
  'echo',
  'get-annotated-message',
  'get-env',
  'get-resource-links',
  'get-resource-reference',
  'get-structured-content',
  'get-sum',
  'get-tiny-image',
  'gzip-file-as-resource',
  'simulate-research-query',
  'toggle-simulated-logging',
  'toggle-subscriber-updates',
  'trigger-long-running-operation',
];

describe.each(['stdio', 'streamable HTTP'] as const)('server-everything over %s', (kind) => {
  let http: EverythingHttp | undefined;

  beforeAll(async () => {
    if (kind === 'streamable HTTP') http = await startEverythingHttp();
  });
  afterAll(async () => {
    await http?.stop();
  });

  const open = () => {
    if (kind === 'stdio') return connect(stdioTransport(everythingStdio()));
    if (http === undefined) throw new Error('the HTTP server did not start');
    return connect(new StreamableHTTPClientTransport(new URL(http.url)));
  };

  it('lists the tools we use, with their argument shapes', { timeout: TEST_TIMEOUT }, async () => {
    const { client } = await open();
    expect(client.getServerVersion()).toMatchObject({ name: 'mcp-servers/everything' });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(EVERYTHING_TOOLS);
    const schema = (name: string) => tools.find((tool) => tool.name === name)?.inputSchema;
    expect(schema('echo')).toMatchObject({
      type: 'object',
      properties: { message: { type: 'string' } },
      required: ['message'],
    });
    expect(schema('get-sum')).toMatchObject({
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    });
    expect(schema('trigger-long-running-operation')).toMatchObject({
      properties: { duration: { type: 'number', default: 10 }, steps: { type: 'number', default: 5 } },
    });
    expect(schema('trigger-long-running-operation')).not.toHaveProperty('required');
    expect(schema('get-tiny-image')).toMatchObject({ type: 'object', properties: {} });
    // The one task-only tool: after listTools the SDK client refuses a plain call to it, before sending.
    expect(tools.find((tool) => tool.name === 'simulate-research-query')?.execution).toEqual({
      taskSupport: 'required',
    });
    const refused = await rejection(callTool(client, 'simulate-research-query', { topic: 'x' }));
    expect(refused).toBeInstanceOf(McpError);
    expect(refused).toMatchObject({ code: ErrorCode.InvalidRequest });
  });

  it('echo and get-sum answer with one text part', { timeout: TEST_TIMEOUT }, async () => {
    const { client } = await open();
    expect(await callTool(client, 'echo', { message: 'hello mcp' })).toEqual({
      content: [{ type: 'text', text: 'Echo: hello mcp' }],
    });
    expect(await callTool(client, 'get-sum', { a: 2, b: 3.5 })).toEqual({
      content: [{ type: 'text', text: 'The sum of 2 and 3.5 is 5.5.' }],
    });
  });

  it('reports progress to the onprogress callback of the request', { timeout: TEST_TIMEOUT }, async () => {
    const { client, errors } = await open();
    const progress: Progress[] = [];
    const result = await callTool(
      client,
      'trigger-long-running-operation',
      { duration: 2, steps: 4 },
      { onprogress: (update) => progress.push(update) },
    );
    expect(texts(result)).toEqual(['Long running operation completed. Duration: 2 seconds, Steps: 4.']);
    // { progress, total } without the token (the SDK uses the request id as token and strips it). The last
    // notification is written right before the result and may be processed after it: then it is dropped
    // and reported to onerror as "unknown token" (typescript-sdk#2580), so only the first ones are certain.
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.slice(0, 2)).toEqual([
      { progress: 1, total: 4 },
      { progress: 2, total: 4 },
    ]);
    progress.forEach((update, index) => expect(update).toEqual({ progress: index + 1, total: 4 }));
    for (const error of errors) expect(error.message).toMatch(/progress notification for an unknown token/);
  });

  it(
    'an AbortSignal rejects the call at once; the server keeps running the tool',
    { timeout: TEST_TIMEOUT },
    async () => {
      const { client, errors } = await open();
      const controller = new AbortController();
      let abortedAt = 0;
      const call = callTool(
        client,
        'trigger-long-running-operation',
        { duration: 3, steps: 6 },
        {
          signal: controller.signal,
          onprogress: () => {
            if (abortedAt !== 0) return;
            abortedAt = Date.now();
            controller.abort();
          },
        },
      );
      const error = await rejection(call);
      const latency = Date.now() - abortedAt;
      // Rejected inside the abort listener (same tick): McpError with the *timeout* code, the reason stringified.
      expect(error).toBeInstanceOf(McpError);
      expect(error).toMatchObject({ code: ErrorCode.RequestTimeout });
      expect((error as McpError).message).toBe('MCP error -32001: AbortError: This operation was aborted');
      expect(latency).toBeLessThan(3_000);
      // notifications/cancelled reaches the server, which withholds the result but does not stop the tool:
      // its later progress notifications (up to the last, 6 of 6) arrive for a retired token, to client.onerror.
      await waitFor('the last late progress notification', () =>
        errors.some((e) => /progress notification for an unknown token.*"progress":6,/.test(e.message)),
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(errors.filter((e) => /response for an unknown message ID/.test(e.message))).toEqual([]);
      expect(await callTool(client, 'echo', { message: 'still connected' })).toEqual({
        content: [{ type: 'text', text: 'Echo: still connected' }],
      });

      // An Error as reason ends up in the message; a signal aborted before the call rejects with the reason itself.
      const withReason = new AbortController();
      const second = callTool(
        client,
        'trigger-long-running-operation',
        { duration: 2, steps: 1 },
        { signal: withReason.signal },
      );
      setTimeout(() => withReason.abort(new Error('user stop')), 200);
      expect(await rejection(second)).toMatchObject({
        code: ErrorCode.RequestTimeout,
        message: 'MCP error -32001: Error: user stop',
      });
      const preAborted = new AbortController();
      preAborted.abort();
      const early = await rejection(callTool(client, 'echo', { message: 'x' }, { signal: preAborted.signal }));
      expect(early).toBe(preAborted.signal.reason);
      expect(early).not.toBeInstanceOf(McpError);
      expect(early).toMatchObject({ name: 'AbortError' });
    },
  );

  it('get-tiny-image returns an image part between two text parts', { timeout: TEST_TIMEOUT }, async () => {
    const { client } = await open();
    const result = await callTool(client, 'get-tiny-image', {});
    expect(result.content.map((part) => part.type)).toEqual(['text', 'image', 'text']);
    const image = result.content[1];
    expect(image).toEqual({ type: 'image', data: expect.any(String) as string, mimeType: 'image/png' });
    const data = image?.type === 'image' ? image.data : '';
    expect(Buffer.from(data, 'base64').subarray(0, 8)).toEqual(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]));
  });

  it('tool failures are isError results; only non-tool requests reject', { timeout: TEST_TIMEOUT }, async () => {
    const { client } = await open();
    // Invalid arguments: the server's McpServer turns its own -32602 into an isError result.
    const invalid = await callTool(client, 'get-sum', { a: 'two', b: 3 });
    expect(invalid.isError).toBe(true);
    expect(texts(invalid)).toEqual([
      'MCP error -32602: Input validation error: Invalid arguments for tool get-sum: Invalid input: expected number, received string at a',
    ]);
    // An exception thrown by the tool handler: its message, no prefix.
    expect(await callTool(client, 'get-resource-reference', { resourceType: 'Text', resourceId: -1 })).toEqual({
      content: [{ type: 'text', text: 'Invalid resourceId: -1. Must be a finite positive integer.' }],
      isError: true,
    });
    // Even an unknown tool is a result, not a JSON-RPC error.
    expect(await callTool(client, 'no-such-tool', {})).toEqual({
      content: [{ type: 'text', text: 'MCP error -32602: Tool no-such-tool not found' }],
      isError: true,
    });
    // Other requests do reject with McpError (the message carries the prefix twice).
    const missing = await rejection(client.readResource({ uri: 'demo://no-such-resource' }));
    expect(missing).toBeInstanceOf(McpError);
    expect(missing).toMatchObject({ code: ErrorCode.InvalidParams });
    expect((missing as McpError).message).toContain('Resource demo://no-such-resource not found');
  });

  it('lists and reads resources', { timeout: TEST_TIMEOUT }, async () => {
    const { client } = await open();
    const { resources } = await client.listResources();
    const uri = 'demo://resource/static/document/features.md';
    expect(resources).toContainEqual(expect.objectContaining({ uri, name: 'features.md', mimeType: 'text/markdown' }));
    expect(resources.every((resource) => resource.uri.startsWith('demo://resource/static/document/'))).toBe(true);
    const { contents } = await client.readResource({ uri });
    expect(contents).toHaveLength(1);
    expect(contents[0]).toMatchObject({ uri, mimeType: 'text/markdown', text: expect.stringMatching(/^# /) as string });
    // Template resources are readable though not listed.
    const dynamic = await client.readResource({ uri: 'demo://resource/dynamic/text/7' });
    expect(dynamic.contents[0]).toMatchObject({
      mimeType: 'text/plain',
      text: expect.stringMatching(/^Resource 7: This is a plaintext resource/) as string,
    });
  });

  if (kind === 'stdio') {
    it(
      'a killed server rejects the pending call with "Connection closed" and fires onclose',
      { timeout: TEST_TIMEOUT },
      async () => {
        const session = await open();
        const transport = session.client.transport as StdioClientTransport;
        const pid = transport.pid;
        expect(pid).toEqual(expect.any(Number));
        // Killed once the first progress notification shows the tool is running.
        let started = 0;
        const call = callTool(
          session.client,
          'trigger-long-running-operation',
          { duration: 20, steps: 40 },
          { onprogress: () => (started += 1) },
        );
        await waitFor('the first progress notification', () => started > 0);
        const killedAt = Date.now();
        process.kill(pid ?? 0, 'SIGKILL');
        const error = await rejection(call);
        expect(Date.now() - killedAt).toBeLessThan(5_000);
        expect(error).toBeInstanceOf(McpError);
        expect(error).toMatchObject({
          code: ErrorCode.ConnectionClosed,
          message: 'MCP error -32000: Connection closed',
        });
        expect(session.closes).toBe(1);
        expect(transport.pid).toBeNull();
        expect(session.client.transport).toBeUndefined();
        // Later requests fail at once with a plain Error.
        const after = await rejection(callTool(session.client, 'echo', { message: 'x' }));
        expect(after).not.toBeInstanceOf(McpError);
        expect(after).toMatchObject({ message: 'Not connected' });
      },
    );
  } else {
    it(
      'a killed HTTP server leaves the pending call to its request timeout; no onclose',
      { timeout: TEST_TIMEOUT },
      async () => {
        const own = await startEverythingHttp();
        try {
          const session = await connect(new StreamableHTTPClientTransport(new URL(own.url)));
          expect((session.client.transport as StreamableHTTPClientTransport).sessionId).toEqual(expect.any(String));
          let started = 0;
          const call = callTool(
            session.client,
            'trigger-long-running-operation',
            { duration: 20, steps: 40 },
            { timeout: 10_000, onprogress: () => (started += 1) },
          );
          // Killed once the tool is running and its result stream (the POST's SSE response) is open.
          await waitFor('the first progress notification', () => started > 0);
          process.kill(own.pid, 'SIGKILL');
          const error = await rejection(call);
          expect(error).toBeInstanceOf(McpError);
          expect(error).toMatchObject({
            code: ErrorCode.RequestTimeout,
            message: 'MCP error -32001: Request timed out',
          });
          expect(session.closes).toBe(0);
          expect(session.errors.some((e) => /SSE stream disconnected|fetch failed/.test(e.message))).toBe(true);
        } finally {
          await own.stop();
        }
      },
    );
  }
});

describe('server-filesystem over stdio', () => {
  let inside = '';
  let outside = '';

  beforeAll(async () => {
    // realpath: the server resolves symlinks and reports (and compares) real paths.
    inside = await realpath(await mkdtemp(join(tmpdir(), 'dh-mcp-inside-')));
    outside = await realpath(await mkdtemp(join(tmpdir(), 'dh-mcp-outside-')));
    await writeFile(join(inside, 'note.txt'), 'inside note\n');
    await writeFile(join(outside, 'secret.txt'), 'outside secret\n');
  });
  afterAll(async () => {
    await rm(inside, { recursive: true, force: true });
    await rm(outside, { recursive: true, force: true });
  });

  const allowed = async (client: Client) => texts(await callTool(client, 'list_allowed_directories', {}))[0];
  const read = (client: Client, path: string) => callTool(client, 'read_text_file', { path });
  const denied = (path: string, dir: string) =>
    `Access denied - path outside allowed directories: ${path} not in ${dir}`;

  it(
    'lists its tools, reads inside its directory and refuses outside with an isError result',
    { timeout: TEST_TIMEOUT },
    async () => {
      const { client } = await connect(stdioTransport(filesystemStdio([inside])));
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual([
        'create_directory',
        'directory_tree',
        'edit_file',
        'get_file_info',
        'list_allowed_directories',
        'list_directory',
        'list_directory_with_sizes',
        'move_file',
        'read_file',
        'read_media_file',
        'read_multiple_files',
        'read_text_file',
        'search_files',
        'write_file',
      ]);
      expect(tools.find((tool) => tool.name === 'read_text_file')?.inputSchema).toMatchObject({
        properties: { path: { type: 'string' }, head: { type: 'number' }, tail: { type: 'number' } },
        required: ['path'],
      });
      expect(await allowed(client)).toBe(`Allowed directories:\n${inside}`);
      expect(await read(client, join(inside, 'note.txt'))).toEqual({
        content: [{ type: 'text', text: 'inside note\n' }],
        structuredContent: { content: 'inside note\n' },
      });
      const secret = join(outside, 'secret.txt');
      expect(await read(client, secret)).toEqual({
        content: [{ type: 'text', text: denied(secret, inside) }],
        isError: true,
      });
    },
  );

  it(
    'a client with the roots capability replaces the command-line directories with its roots',
    { timeout: TEST_TIMEOUT },
    async () => {
      let roots = [outside];
      let asked = 0;
      const session = await connect(
        stdioTransport(filesystemStdio([inside])),
        { capabilities: { roots: { listChanged: true } } },
        (client) =>
          client.setRequestHandler(ListRootsRequestSchema, () => {
            asked += 1;
            return { roots: roots.map((dir) => ({ uri: pathToFileURL(dir).href, name: 'workspace' })) };
          }),
      );
      const { client } = session;
      // The server asks for roots/list once initialized, asynchronously: right after connect() it may still
      // use the command-line directories.
      await waitFor(
        'the roots to replace the command-line directory',
        async () => (await allowed(client)) === `Allowed directories:\n${outside}`,
      );
      expect(asked).toBe(1);
      const note = join(inside, 'note.txt');
      const secret = join(outside, 'secret.txt');
      expect(texts(await read(client, secret))).toEqual(['outside secret\n']);
      expect(await read(client, note)).toEqual({
        content: [{ type: 'text', text: denied(note, outside) }],
        isError: true,
      });

      // notifications/roots/list_changed: it asks again and replaces them again.
      roots = [inside];
      await client.sendRootsListChanged();
      await waitFor('the changed roots', async () => (await allowed(client)) === `Allowed directories:\n${inside}`);
      expect(asked).toBe(2);
      expect(texts(await read(client, note))).toEqual(['inside note\n']);
      expect((await read(client, secret)).isError).toBe(true);

      // Roots without one existing directory are ignored: the previous directories stay.
      roots = [join(outside, 'does-not-exist')];
      await client.sendRootsListChanged();
      await waitFor('the server to reject the roots', () =>
        session.stderr.includes('No valid root directories provided by client'),
      );
      expect(asked).toBe(3);
      expect(await allowed(client)).toBe(`Allowed directories:\n${inside}`);
    },
  );
});

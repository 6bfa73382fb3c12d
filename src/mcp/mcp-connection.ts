// One live MCP client connection to one server process (stdio) or endpoint (streamable HTTP): connects on
// demand, and when the server dies, reconnects with backoff so a later call finds it again. Calls carry the
// caller's abort signal (the SDK sends MCP cancellation), a timeout, and progress notifications.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ListRootsRequestSchema,
  type CallToolResult,
  type ReadResourceResult,
  type Resource,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { pathToFileURL } from 'node:url';
import type { McpServerLaunch } from './mcp-config.js';

export interface McpCallOptions {
  readonly signal?: AbortSignal;
  readonly timeoutMs: number;
  readonly onProgress?: (update: { progress: number; total?: number; message?: string }) => void;
}

/** The client version announced at initialize (informational only). */
const CLIENT_VERSION = '0.1.0';
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;
/** Kept from the server's stderr for the error when it fails to start. */
const STDERR_TAIL_CHARS = 2_000;

export class McpConnection {
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private failures = 0;
  private nextAttemptAt = 0;
  private lastError: string | undefined;
  private closed = false;
  private stderrTail = '';
  private stdio: StdioClientTransport | undefined;
  /** Aborted when an HTTP server is found gone, failing its pending requests now rather than at their timeout. */
  private gone = new AbortController();

  /** `roots`: directories announced to the server as its MCP roots (a confined server's workspace). */
  constructor(
    readonly serverName: string,
    private readonly launch: McpServerLaunch,
    private readonly roots: readonly string[] = [],
    private readonly log: (message: string) => void = () => {},
  ) {}

  /** Why the last connection attempt failed, when it did. */
  get problem(): string | undefined {
    return this.lastError;
  }

  /** The server process's pid while a stdio connection is up (diagnostics, `dh mcp ls`). */
  get pid(): number | undefined {
    return this.client ? (this.stdio?.pid ?? undefined) : undefined;
  }

  get connected(): boolean {
    return this.client !== undefined;
  }

  /** The connected client: connects now if needed, waiting out the backoff of earlier failed attempts. */
  async ensure(signal?: AbortSignal): Promise<Client> {
    if (this.closed) throw new Error(`the MCP server "${this.serverName}" was shut down`);
    if (this.client) return this.client;
    this.connecting ??= this.connect(signal).finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  async listTools(): Promise<Tool[]> {
    const client = await this.ensure();
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor !== undefined ? { cursor } : {});
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return tools;
  }

  /** True when the server offers resources. */
  async hasResources(): Promise<boolean> {
    return (await this.ensure()).getServerCapabilities()?.resources !== undefined;
  }

  async listResources(options: McpCallOptions): Promise<Resource[]> {
    const client = await this.ensure(options.signal);
    options = this.bound(options);
    const resources: Resource[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listResources(cursor !== undefined ? { cursor } : {}, requestOptions(options));
      resources.push(...page.resources);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return resources;
  }

  async readResource(uri: string, options: McpCallOptions): Promise<ReadResourceResult> {
    const client = await this.ensure(options.signal);
    return client.readResource({ uri }, requestOptions(this.bound(options)));
  }

  async callTool(name: string, args: Record<string, unknown>, options: McpCallOptions): Promise<CallToolResult> {
    const client = await this.ensure(options.signal);
    return (await client.callTool(
      { name, arguments: args },
      undefined,
      requestOptions(this.bound(options)),
    )) as CallToolResult;
  }

  /** The caller's options with the connection's own abort joined to its signal. */
  private bound(options: McpCallOptions): McpCallOptions {
    const signal = options.signal ? AbortSignal.any([options.signal, this.gone.signal]) : this.gone.signal;
    return { ...options, signal };
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => {});
  }

  private async connect(signal: AbortSignal | undefined): Promise<Client> {
    const wait = this.nextAttemptAt - Date.now();
    if (wait > 0) await sleep(wait, signal);
    const client = new Client(
      { name: 'durable-harness', version: CLIENT_VERSION },
      { capabilities: this.roots.length > 0 ? { roots: { listChanged: false } } : {} },
    );
    if (this.roots.length > 0) {
      client.setRequestHandler(ListRootsRequestSchema, () => ({
        roots: this.roots.map((dir) => ({ uri: pathToFileURL(dir).href, name: 'workspace' })),
      }));
    }
    const transport = this.transport();
    try {
      await client.connect(transport);
    } catch (error) {
      await client.close().catch(() => {});
      this.failures++;
      this.nextAttemptAt = Date.now() + Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (this.failures - 1));
      const stderr = this.stderrTail.trim();
      this.lastError = `${message(error)}${stderr !== '' ? ` (its stderr: ${stderr.slice(-500)})` : ''}`;
      throw new Error(`the MCP server "${this.serverName}" could not be started: ${this.lastError}`, { cause: error });
    }
    this.failures = 0;
    this.lastError = undefined;
    this.gone = new AbortController();
    const gone = this.gone;
    // A streamable-HTTP server that goes away neither closes the client nor fails its pending requests
    // (they would wait for their timeout): once the transport cannot even reach it again, fail them now
    // and drop the connection, so the next call reconnects.
    client.onerror = (error) => {
      if (this.launch.kind !== 'http' || this.client !== client || !/fetch failed|ECONNREFUSED/i.test(error.message)) {
        return;
      }
      this.client = undefined;
      this.lastError = `the server went away (${error.message})`;
      gone.abort(new Error(`the MCP server "${this.serverName}" went away (${error.message})`));
      void client.close().catch(() => {});
    };
    client.onclose = () => {
      if (this.client !== client) return;
      this.client = undefined;
      if (this.closed) return;
      // Reconnected by the next call (after the backoff), so a crashed server comes back when it is needed.
      this.lastError = 'the server closed the connection';
      this.failures++;
      this.nextAttemptAt = Date.now() + Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (this.failures - 1));
      this.log(`MCP server "${this.serverName}" closed the connection; it restarts on the next call`);
    };
    this.client = client;
    return client;
  }

  private transport(): Transport {
    if (this.launch.kind === 'http') {
      return new StreamableHTTPClientTransport(new URL(this.launch.url), {
        requestInit: { headers: { ...this.launch.headers } },
      });
    }
    const transport = new StdioClientTransport({
      command: this.launch.command,
      args: [...this.launch.args],
      // The worker's own environment (provider keys) never reaches a server: only the SDK's safe defaults
      // (PATH, HOME, ...) and what the configuration names.
      env: { ...getDefaultEnvironment(), ...this.launch.env },
      ...(this.launch.cwd !== undefined ? { cwd: this.launch.cwd } : {}),
      stderr: 'pipe',
    });
    this.stderrTail = '';
    this.stdio = transport;
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_CHARS);
    });
    return transport;
  }
}

function requestOptions(options: McpCallOptions) {
  return {
    ...(options.signal ? { signal: options.signal } : {}),
    timeout: options.timeoutMs,
    // A call that reports progress is alive: its timeout restarts with each report.
    resetTimeoutOnProgress: true,
    ...(options.onProgress
      ? {
          onprogress: (p: { progress: number; total?: number | undefined; message?: string | undefined }) =>
            options.onProgress?.({
              progress: p.progress,
              ...(p.total !== undefined ? { total: p.total } : {}),
              ...(p.message !== undefined ? { message: p.message } : {}),
            }),
        }
      : {}),
  };
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

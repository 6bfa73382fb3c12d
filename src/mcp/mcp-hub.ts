// The worker's MCP servers: one connection per configured server, or, for a server confined to the
// session's workspace, one per workspace (started on first use, stopped when idle). At start every server
// is connected and its tools listed, so the worker's tool list is known before it serves a session.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { DhError } from '../core/errors.js';
import { referencedValues, resolveServerLaunch, type LoadedMcpConfig, type McpServerEntry } from './mcp-config.js';
import { McpConnection } from './mcp-connection.js';

export const McpErrorCode = { ServerFailed: 'MCP_SERVER_FAILED' } as const;

/** How long a confined server's process for one workspace outlives its last call. */
const DEFAULT_IDLE_MS = 5 * 60_000;

export interface McpServerStatus {
  readonly name: string;
  readonly transport: 'stdio' | 'http';
  readonly confined: boolean;
  readonly state: 'ready' | 'failed';
  readonly error?: string;
  /** The server's tools, by their MCP names, sorted. */
  readonly tools: readonly Tool[];
  /** Tools left out because dh cannot call them (they require MCP tasks). */
  readonly unsupported: readonly string[];
  readonly resources: boolean;
}

export interface McpHubOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly log?: (line: string) => void;
  /** A server that cannot start fails the start (the worker), instead of being reported failed (`dh mcp ls`). */
  readonly strict?: boolean;
  readonly idleMs?: number;
}

/** One configured server and its connection(s). */
export class McpServerSlot {
  private shared: McpConnection | undefined;
  private readonly byWorkspace = new Map<string, { connection: McpConnection; timer?: NodeJS.Timeout; busy: number }>();

  /** Secrets the configuration hands this server (see referencedValues). */
  private readonly secrets: readonly string[];

  constructor(
    readonly entry: McpServerEntry,
    private readonly options: McpHubOptions,
  ) {
    this.secrets = referencedValues(entry, options.env);
  }

  /** `text` with every secret handed to this server replaced, so a server that prints one cannot log it. */
  mask(text: string): string {
    let out = text;
    for (const secret of this.secrets) out = out.split(secret).join('[masked]');
    return out;
  }

  get confined(): boolean {
    return 'confine' in this.entry && this.entry.confine === 'workspace';
  }

  /**
   * Runs `use` on the connection for `workspace` (the shared one unless confined), keeping a confined
   * server's process alive while any call uses it and stopping it once idle.
   */
  async with<T>(workspace: string, use: (connection: McpConnection) => Promise<T>): Promise<T> {
    if (!this.confined) {
      this.shared ??= new McpConnection(
        this.entry.name,
        resolveServerLaunch(this.entry, this.options.env),
        [],
        this.options.log,
      );
      return use(this.shared);
    }
    let held = this.byWorkspace.get(workspace);
    if (!held) {
      const launch = resolveServerLaunch(this.entry, this.options.env, workspace);
      held = { connection: new McpConnection(this.entry.name, launch, [workspace], this.options.log), busy: 0 };
      this.byWorkspace.set(workspace, held);
    }
    const slot = held;
    clearTimeout(slot.timer);
    slot.busy++;
    try {
      return await use(slot.connection);
    } finally {
      slot.busy--;
      if (slot.busy === 0) {
        slot.timer = setTimeout(() => {
          if (this.byWorkspace.get(workspace) !== slot || slot.busy > 0) return;
          this.byWorkspace.delete(workspace);
          void slot.connection.close();
        }, this.options.idleMs ?? DEFAULT_IDLE_MS);
        slot.timer.unref();
      }
    }
  }

  /** The shared connection's server process (not a confined server's), while connected. */
  pid(): number | undefined {
    return this.shared?.pid;
  }

  /** Connects (a confined server in a throwaway directory) and lists its tools and whether it has resources. */
  async probe(): Promise<{ tools: Tool[]; unsupported: string[]; resources: boolean }> {
    const list = async (connection: McpConnection) => {
      const all = (await connection.listTools()).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      // A tool that must run as an MCP task cannot be called with tools/call: offering it would only fail.
      const needsTasks = (tool: Tool) => tool.execution?.taskSupport === 'required';
      return {
        tools: all.filter((tool) => !needsTasks(tool)),
        unsupported: all.filter(needsTasks).map((tool) => tool.name),
        resources: await connection.hasResources(),
      };
    };
    if (!this.confined) return this.with('', list);
    const dir = await mkdtemp(join(tmpdir(), `dh-mcp-${this.entry.name}-`));
    const connection = new McpConnection(
      this.entry.name,
      resolveServerLaunch(this.entry, this.options.env, dir),
      [dir],
      this.options.log,
    );
    try {
      return await list(connection);
    } finally {
      await connection.close();
      await rm(dir, { recursive: true, force: true });
    }
  }

  async close(): Promise<void> {
    const connections = [
      ...(this.shared ? [this.shared] : []),
      ...[...this.byWorkspace.values()].map((held) => held.connection),
    ];
    for (const held of this.byWorkspace.values()) clearTimeout(held.timer);
    this.byWorkspace.clear();
    this.shared = undefined;
    await Promise.all(connections.map((connection) => connection.close()));
  }
}

export interface McpHub {
  readonly file: string;
  readonly slots: readonly McpServerSlot[];
  readonly status: readonly McpServerStatus[];
  close(): Promise<void>;
}

/** Connects every configured server (in parallel) and lists its tools. */
export async function startMcpHub(config: LoadedMcpConfig, options: McpHubOptions): Promise<McpHub> {
  const slots = config.servers.map((entry) => new McpServerSlot(entry, options));
  const status = await Promise.all(
    slots.map(async (slot): Promise<McpServerStatus> => {
      const base = {
        name: slot.entry.name,
        transport: 'url' in slot.entry ? ('http' as const) : ('stdio' as const),
        confined: slot.confined,
      };
      try {
        return { ...base, state: 'ready', ...(await slot.probe()) };
      } catch (error) {
        return {
          ...base,
          state: 'failed',
          error: slot.mask(error instanceof Error ? error.message : String(error)),
          tools: [],
          unsupported: [],
          resources: false,
        };
      }
    }),
  );
  const close = async () => {
    await Promise.all(slots.map((slot) => slot.close()));
  };
  const failed = status.filter((s) => s.state === 'failed');
  if (options.strict === true && failed.length > 0) {
    await close();
    throw new DhError(
      McpErrorCode.ServerFailed,
      `MCP server${failed.length > 1 ? 's' : ''} from ${config.file} could not start: ` +
        // Each error names its server already.
        failed.map((s) => s.error ?? `"${s.name}": unknown`).join('; '),
      { servers: failed.map((s) => s.name).join(',') },
    );
  }
  return { file: config.file, slots, status, close };
}

// Launches the reference MCP servers (@modelcontextprotocol/server-everything, server-filesystem) from
// node_modules with this Node (no npx, no network): stdio launch descriptions for StdioClientTransport,
// and server-everything's streamable HTTP transport as a child process on a free port.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { dirname, join } from 'node:path';
import { freePort } from '../../src/local-stack/dev-server.js';

export interface StdioLaunch {
  command: string;
  args: string[];
}

export interface EverythingHttp {
  /** `http://127.0.0.1:<port>/mcp`, for StreamableHTTPClientTransport. */
  url: string;
  /** SIGTERM, then SIGKILL after 5 s; resolves once the process is gone. */
  stop(): Promise<void>;
  pid: number;
}

const READY_TIMEOUT_MS = 30_000;
const require = createRequire(import.meta.url);

/** The absolute path of a package's bin script, from its package.json `bin` field. */
function binScript(pkg: string, bin: string): string {
  const manifestPath = require.resolve(`${pkg}/package.json`);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin?: string | Record<string, string> };
  const relative = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[bin];
  if (relative === undefined) throw new Error(`${pkg} has no bin script ${bin}`);
  return join(dirname(manifestPath), relative);
}

const everythingScript = () => binScript('@modelcontextprotocol/server-everything', 'mcp-server-everything');

/** server-everything over stdio (its first argument picks the transport: stdio, sse or streamableHttp). */
export function everythingStdio(): StdioLaunch {
  return { command: process.execPath, args: [everythingScript(), 'stdio'] };
}

/** server-filesystem over stdio, allowed to access `dirs` (until the client's MCP roots replace them). */
export function filesystemStdio(dirs: string[]): StdioLaunch {
  return {
    command: process.execPath,
    args: [binScript('@modelcontextprotocol/server-filesystem', 'mcp-server-filesystem'), ...dirs],
  };
}

/**
 * server-everything's streamable HTTP transport (`index.js streamableHttp`; the port comes from the PORT
 * environment variable, default 3001; it listens on all interfaces, path /mcp). Retries on another port
 * when the one picked was taken in between.
 */
export async function startEverythingHttp(): Promise<EverythingHttp> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await launchHttp(port);
    } catch (error) {
      if (attempt >= 3 || !(error instanceof Error && error.message.includes('EADDRINUSE'))) throw error;
    }
  }
}

async function launchHttp(port: number): Promise<EverythingHttp> {
  const child = spawn(process.execPath, [everythingScript(), 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // It logs every request on stdout: drain both streams (a full pipe would block it), keep the tail.
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-10_000);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => resolve(signal ?? `exit ${code}`));
  });
  let exitState: string | null = null;
  void exited.then((state) => {
    exitState = state;
  });
  const killOnExit = () => {
    child.kill('SIGKILL');
  };
  process.on('exit', killOnExit);

  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (exitState !== null) return;
    child.kill('SIGTERM');
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 5_000).unref());
    if ((await Promise.race([exited, timer])) === 'timeout') {
      child.kill('SIGKILL');
      await exited;
    }
  };

  try {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (exitState !== null) {
        // Port taken: "Failed to start: Port N is already in use" (the retry looks for EADDRINUSE).
        const inUse = output.includes('already in use') ? ' EADDRINUSE' : '';
        throw new Error(
          `server-everything (HTTP) exited (${String(exitState)})${inUse} before it was ready:\n${output}`,
        );
      }
      if (await accepts(port)) break;
      if (Date.now() > deadline) throw new Error(`server-everything (HTTP) was not ready in time:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  if (child.pid === undefined) throw new Error('server-everything (HTTP) has no pid');
  return { url: `http://127.0.0.1:${port}/mcp`, stop, pid: child.pid };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

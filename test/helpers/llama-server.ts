// Starts the real llama-cpp-python server (`python -m llama_cpp.server`) the test setup installed, on a
// free loopback port, with one thread (faster than two on a busy 2-core machine), and stops, kills or
// restarts it for the local-model suite.
import { spawn, type ChildProcess } from 'node:child_process';
import { inject } from 'vitest';
import { freePort } from '../../src/local-stack/dev-server.js';

/** The name the server answers to (`--model_alias`), i.e. DH_MODEL. */
export const LOCAL_MODEL = 'smollm2-135m';
const READY_TIMEOUT_MS = 120_000;

export interface LlamaServerOptions {
  /** The server's context window (`--n_ctx`). */
  readonly nCtx: number;
  /** `--chat_format`: `chatml-function-calling` turns tool definitions into tool calls. */
  readonly chatFormat?: string;
}

export interface LlamaServer {
  /** The OpenAI-compatible base URL, `http://127.0.0.1:<port>/v1`. */
  readonly baseURL: string;
  /** Everything the server printed (for failure messages). */
  output(): string;
  /** SIGKILL, as a crash would; resolves once it is gone. */
  kill(): Promise<void>;
  /** A new server process on the same port (after kill or stop). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startLlamaServer(options: LlamaServerOptions): Promise<LlamaServer> {
  const python = inject('llamaPython');
  const model = inject('llamaModelPath');
  const port = await freePort();
  const baseURL = `http://127.0.0.1:${port}/v1`;
  let output = '';
  let child: ChildProcess | undefined;

  const launch = async () => {
    const args = [
      '-m',
      'llama_cpp.server',
      '--model',
      model,
      '--model_alias',
      LOCAL_MODEL,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--n_ctx',
      String(options.nCtx),
      '--n_threads',
      '1',
      '--n_threads_batch',
      '1',
      ...(options.chatFormat !== undefined ? ['--chat_format', options.chatFormat] : []),
    ];
    const proc = spawn(python, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-20_000);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    const state: { exited: string | null } = { exited: null };
    proc.once('exit', (code, signal) => {
      state.exited = signal ?? `exit ${code}`;
    });
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (state.exited !== null)
        throw new Error(`the llama-cpp-python server exited (${state.exited}) before it was ready:\n${output}`);
      const ok = await fetch(`${baseURL}/models`)
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) return;
      if (Date.now() > deadline) throw new Error(`the llama-cpp-python server was not ready in time:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };

  const end = async (signal: NodeJS.Signals) => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill(signal);
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await gone;
    clearTimeout(timer);
  };

  await launch();
  return {
    baseURL,
    output: () => output,
    kill: () => end('SIGKILL'),
    restart: launch,
    stop: () => end('SIGTERM'),
  };
}

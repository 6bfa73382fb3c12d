// A stdio pass-through in front of server-everything that logs each `tools/call` it forwards, with its own
// pid: proof of which calls reached a server process, and from which worker's process. Plus the scripted
// replies the MCP scenario tests build their model from.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { everythingStdio } from './mcp-test-servers.js';

const TAP = `import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
const [log, ...server] = process.argv.slice(2);
const child = spawn(process.execPath, server, { stdio: ['pipe', 'inherit', 'inherit'] });
child.stdin.on('error', () => {});
let pending = '';
process.stdin.on('data', (chunk) => {
  pending += chunk.toString('utf8');
  for (let nl = pending.indexOf('\\n'); nl >= 0; nl = pending.indexOf('\\n')) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    try {
      const m = JSON.parse(line);
      if (m.method === 'tools/call') appendFileSync(log, JSON.stringify({ pid: process.pid, name: m.params.name }) + '\\n');
    } catch {}
  }
  child.stdin.write(chunk);
});
process.stdin.on('end', () => child.stdin.end());
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code) => process.exit(code ?? 1));
`;

export interface CallTap {
  /** An mcp.json entry that runs server-everything behind the tap (`extra`: dh options such as `env`). */
  everything(extra?: Record<string, unknown>): Record<string, unknown>;
  /** The calls that reached a server, in order. */
  calls(): { pid: number; name: string }[];
  /** Forgets the calls so far. */
  reset(): void;
}

/** Writes the tap script into `dir` (the test's temp directory); its log lives there too. */
export function callTap(dir: string): CallTap {
  const script = join(dir, 'tap.mjs');
  const log = join(dir, 'calls.jsonl');
  writeFileSync(script, TAP);
  return {
    everything: (extra = {}) => {
      const launch = everythingStdio();
      return { command: launch.command, args: [script, log, ...launch.args], ...extra };
    },
    calls: () => {
      let text = '';
      try {
        text = readFileSync(log, 'utf8');
      } catch {
        // nothing called yet
      }
      return text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as { pid: number; name: string });
    },
    reset: () => rmSync(log, { force: true }),
  };
}

/** A scripted reply: the model calls `name` when the last user message contains `task`. */
export const toolCallReply = (task: string, id: string, name: string, args: unknown) => ({
  match: { lastUserContains: task },
  toolCalls: [{ id, name, arguments: JSON.stringify(args) }],
});

/** A scripted reply: the model answers `text` when the last user message contains `task`. */
export const answerReply = (task: string, text: string) => ({ match: { lastUserContains: task }, text });

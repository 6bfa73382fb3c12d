// Runs one built-in tool in a child Node process: a tool that blocks its event loop (a backtracking pattern)
// then fails the test by its timeout instead of freezing the test process; afterEach kills what is left.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ToolOutput } from '../../src/plugins/contracts.js';

const TOOLS = {
  grep: ['../../src/tools/grep.ts', 'createGrepTool'],
  glob: ['../../src/tools/glob.ts', 'createGlobTool'],
} as const;

const running = new Set<ChildProcess>();

/** `tool`'s result for `args` in `workspace`, run by a fresh `node --import tsx` process. */
export function runToolInProcess(tool: keyof typeof TOOLS, args: unknown, workspace: string): Promise<ToolOutput> {
  const [path, factory] = TOOLS[tool];
  const program = `
    const { ${factory} } = await import(${JSON.stringify(new URL(path, import.meta.url).href)});
    const context = { sessionId: 's', callId: 'c', workspace: process.argv[2], signal: new AbortController().signal };
    const output = await ${factory}().run(JSON.parse(process.argv[1]), context);
    process.stdout.write(JSON.stringify(output));`;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '--eval', program, JSON.stringify(args), workspace],
    { cwd: fileURLToPath(new URL('../../', import.meta.url)), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      running.delete(child);
      if (code === 0) resolve(JSON.parse(stdout) as ToolOutput);
      else reject(new Error(`${tool} exited with ${String(code)}: ${stderr}`));
    });
  });
}

/** Kills the tool processes still running (a test that timed out leaves one behind). */
export function killToolProcesses(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

// The README's first minutes, tried as a new user would: a fresh clone of the committed tree in a temp
// dir, an empty DH_HOME, then `npm install`, `npx dh demo` and `npx dh audit <its session>` run by a
// shell exactly as README.md spells them, each expected to exit 0.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/local-stack/dev-server.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const MINUTE = 60_000;
// Cold npm cache on 2 cores: better-sqlite3 may compile from source when its prebuilt binary is unreachable.
const INSTALL_TIMEOUT_MS = 6 * MINUTE;
// The demo waits up to 2 min for the step retried after its worker's SIGKILL; bundling and Temporal come first.
const DEMO_TIMEOUT_MS = 4 * MINUTE;
const AUDIT_TIMEOUT_MS = 2 * MINUTE;
const DOWN_TIMEOUT_MS = MINUTE;
const TAIL_CHARS = 4_000;

interface Step {
  readonly command: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly timedOut: boolean;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** The repository this test file belongs to; the clone is made from its committed HEAD. */
function repoRoot(): string {
  try {
    return execFileSync('git', ['rev-parse', '--show-toplevel'], { cwd: HERE, encoding: 'utf8' }).trim();
  } catch (error) {
    throw new Error(
      `the fresh-clone test needs ${HERE} inside a git work tree (it clones the committed tree to try it as a ` +
        `new user would); \`git rev-parse --show-toplevel\` failed: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/**
 * The commands a new user copies from README.md, taken from the README itself so that an edit that breaks
 * them fails here: the install from the first line of "Two commands", `npx dh demo` from its paragraph,
 * and the audit as the CLI section writes any command (`npx dh <command>` with the `dh audit <session>` row).
 */
function readmeCommands(readme: string): { install: string; demo: string; audit: (session: string) => string } {
  const block = /## Two commands\s+```sh\n([^\n]*)\n/.exec(readme)?.[1];
  if (block === undefined) throw new Error('README.md: no ```sh block under "## Two commands"');
  const install = block.split('&&')[0]?.trim() ?? '';
  const spans = new Set([...readme.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] as string));
  const need = (span: string): string => {
    if (!spans.has(span)) throw new Error(`README.md no longer writes \`${span}\`; this test runs what it writes`);
    return span;
  };
  const demo = need('npx dh demo');
  const runner = need('npx dh <command>').replace(/ <command>$/, '');
  const auditRow = [...spans].find((span) => span.startsWith('dh audit <session>'));
  if (auditRow === undefined) throw new Error('README.md: no `dh audit <session> …` row in the CLI table');
  return {
    install,
    demo,
    audit: (session) =>
      `${runner} ${auditRow
        .replace(/^dh /, '')
        .replace(/ \[.*$/, '')
        .replace('<session>', session)}`,
  };
}

/**
 * A new user's shell: this process's environment without what would point dh at another home, cluster,
 * store or provider, and without what vitest and a parent `npm`/`npx` add (npm_* config, PATH entries
 * into this checkout's node_modules/.bin). Ports and the Temporal CLI are the machine's, not the commands'.
 */
function newUserEnv(home: string, port: number, uiPort: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(DH_|TEMPORAL_|DEEPSEEK_|OPENAI_|OTEL_|VITEST)/.test(key) || /^npm_/.test(key)) continue;
    if (key === 'NODE_ENV' || key === 'TEST' || key === 'INIT_CWD') continue;
    env[key] = value;
  }
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .join(':');
  return {
    ...env,
    DH_HOME: home,
    DH_TEMPORAL_PORT: String(port),
    DH_TEMPORAL_UI_PORT: String(uiPort),
    // The CLI the suite already resolved (outside any clone, as a new user's cached build is): nothing builds.
    TEMPORAL_CLI_PATH: inject('temporalCliPath'),
  };
}

/** Runs `command` through a shell in `cwd`, in its own process group (killed whole on timeout). */
function sh(command: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Step> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const signalGroup = (signal: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // Already gone.
      }
    };
    let hard: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      signalGroup('SIGTERM');
      hard = setTimeout(() => signalGroup('SIGKILL'), 10_000);
    }, timeoutMs);
    child.once('error', (error) => {
      stderr += `\nspawn failed: ${error.message}`;
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(hard);
      resolve({ command, code, signal, timedOut, stdout, stderr, ms: Date.now() - started });
    });
  });
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** The tail of every log under DH_HOME/logs (the local Temporal server's, the demo workers'). */
function logTails(home: string): string {
  const dir = join(home, 'logs');
  if (!existsSync(dir)) return `(no ${dir})`;
  const names = readdirSync(dir);
  if (names.length === 0) return `(${dir} is empty)`;
  return names
    .map((name) => `--- ${join(dir, name)} (tail) ---\n${readFileSync(join(dir, name), 'utf8').slice(-TAIL_CHARS)}`)
    .join('\n');
}

/** Explains a step in an assertion message: command, exit, time, output tails and the stack's logs. */
function explain(step: Step, home: string): string {
  const how = step.timedOut ? 'killed at its timeout' : `exit ${step.code} (signal ${step.signal ?? '-'})`;
  return [
    `\`${step.command}\` in the clone: ${how} after ${seconds(step.ms)}`,
    `--- stdout (tail) ---\n${step.stdout.slice(-TAIL_CHARS)}`,
    `--- stderr (tail) ---\n${step.stderr.slice(-TAIL_CHARS)}`,
    logTails(home),
  ].join('\n');
}

/** Processes whose command line or working directory is under `root` (Linux /proc; none elsewhere). */
function processesUnder(root: string): { pid: number; cmdline: string }[] {
  if (!existsSync('/proc/self/cmdline')) return [];
  const found: { pid: number; cmdline: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${pid}/cwd`);
      } catch {
        // Not ours to read.
      }
      if (cmdline.includes(root) || cwd.startsWith(root)) found.push({ pid, cmdline });
    } catch {
      // Exited while listing.
    }
  }
  return found;
}

describe('a new user, from a fresh clone', () => {
  const root = mkdtempSync(join(tmpdir(), 'dh-fresh-clone-'));
  const clone = join(root, 'durable-harness');
  const home = join(root, 'dh-home');
  let env: NodeJS.ProcessEnv | undefined;

  afterAll(async () => {
    if (env !== undefined && existsSync(join(clone, 'node_modules'))) {
      const down = await sh('npx dh down', clone, env, DOWN_TIMEOUT_MS);
      console.log(`fresh clone: npx dh down ${seconds(down.ms)}`);
      if (down.code !== 0) console.error(`dh down failed:\n${explain(down, home)}`);
    }
    // Anything the clone started that `dh down` left (or could not reach) must not outlive the test.
    const left = processesUnder(root);
    for (const { pid, cmdline } of left) {
      console.error(`fresh clone: killing leftover pid ${pid}: ${cmdline}`);
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone.
      }
    }
    rmSync(root, { recursive: true, force: true });
  }, 2 * MINUTE);

  it(
    'npm install, npx dh demo and npx dh audit <session> each exit 0',
    async () => {
      const durations: string[] = [];
      const timed = (label: string, ms: number) => {
        durations.push(`${label.padEnd(28)} ${seconds(ms)}`);
        console.log(`fresh clone: ${label} ${seconds(ms)}`);
      };

      // A clone holds what was committed: uncommitted and untracked changes in this checkout are not tried
      // (by design — this is what a new user gets).
      const source = repoRoot();
      const cloneStarted = Date.now();
      execFileSync('git', ['clone', '--quiet', '--no-hardlinks', source, clone], { stdio: 'pipe' });
      timed('git clone', Date.now() - cloneStarted);
      mkdirSync(home);
      env = newUserEnv(home, await freePort(), await freePort());

      const commands = readmeCommands(readFileSync(join(clone, 'README.md'), 'utf8'));
      expect(commands.install).toBe('npm install');

      const install = await sh(commands.install, clone, env, INSTALL_TIMEOUT_MS);
      timed(commands.install, install.ms);
      expect(install.code, explain(install, home)).toBe(0);

      const demo = await sh(commands.demo, clone, env, DEMO_TIMEOUT_MS);
      timed(commands.demo, demo.ms);
      expect(demo.code, explain(demo, home)).toBe(0);
      expect(demo.stdout, explain(demo, home)).toContain('AUDIT PASSED');
      const session = /^session: (\S+)$/m.exec(demo.stdout)?.[1];
      if (session === undefined)
        throw new Error(`\`${commands.demo}\` printed no "session: <id>" line\n${explain(demo, home)}`);
      // The demo's own "next, try" list is where a new user finds the audit command.
      expect(demo.stdout, explain(demo, home)).toMatch(new RegExp(`^ +npx dh audit ${session} +#`, 'm'));

      const audit = await sh(commands.audit(session), clone, env, AUDIT_TIMEOUT_MS);
      timed(commands.audit('<session>'), audit.ms);
      expect(audit.code, explain(audit, home)).toBe(0);
      expect(audit.stdout, explain(audit, home)).toContain('AUDIT PASSED');
      // The demo left the local Temporal server running, so the audit checks the workflow history too.
      expect(audit.stdout, explain(audit, home)).toContain('history mirror: ok (');

      console.log(`fresh clone durations:\n  ${durations.join('\n  ')}`);
    },
    12 * MINUTE,
  );
});

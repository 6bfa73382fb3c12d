// `dh demo` end to end on the embedded local stack (TEMPORAL_ADDRESS unset, a temp DH_HOME, free
// ports): it exits 0, its session went through every beat, and `dh audit` passes it afterwards; and
// Ctrl-C mid-demo leaves no worker behind.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/local-stack/dev-server.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { cleanEnv, DH_BIN, describeRun, runDh, tempHome } from './operator-cli.js';

describe('dh demo', () => {
  const home = tempHome('dh-cli-demo-');
  let env: NodeJS.ProcessEnv | undefined;

  afterAll(async () => {
    if (env) {
      const down = await runDh(['down'], env);
      if (down.code !== 0) console.error(`dh down failed:\n${describeRun(down)}`);
    }
    home.cleanup();
  });

  it('runs offline, exits 0 with a clean audit, and its session audits clean afterwards', async () => {
    env = cleanEnv({
      DH_HOME: home.home,
      TEMPORAL_CLI_PATH: inject('temporalCliPath'),
      DH_TEMPORAL_PORT: String(await freePort()),
      DH_TEMPORAL_UI_PORT: '0',
      DH_LOG_LEVEL: 'warn',
    });
    const demo = await runDh(['demo'], env, 240_000);
    expect(demo.code, describeRun(demo)).toBe(0);
    expect(demo.stdout).toContain('AUDIT PASSED');
    expect(demo.stdout).toContain('history mirror: ok (');
    const id = /^session: (\S+)$/m.exec(demo.stdout)?.[1];
    if (id === undefined) throw new Error(`no session id in the output\n${describeRun(demo)}`);
    expect(demo.stdout).toContain(`npx dh show ${id} --step 3.2`);

    const store = SqliteSessionStore.open(join(home.home, 'sessions.db'));
    try {
      const events = await store.read(id);
      const ends = events.flatMap((e) => (e.type === 'turn/end' ? [`${e.turn}:${e.reason}`] : []));
      expect(ends).toEqual(['1:completed', '2:completed', '3:completed', '4:aborted', '5:completed']);
      expect(events.find((e) => e.type === 'tool/result')).toMatchObject({ name: 'list_dir', status: 'ok' });
      const entered = events.flatMap((e) => (e.type === 'user/message' ? [`${e.turn}.${e.step}:${e.origin}`] : []));
      expect(entered).toEqual(expect.arrayContaining(['3.2:inject', '3.2:steer']));
      expect(events.find((e) => e.type === 'assistant/message' && e.turn === 4)).toMatchObject({ interrupted: true });
      // The crashed step: one recorded request, one answer.
      expect(events.filter((e) => e.type === 'request/sent' && e.turn === 5)).toHaveLength(1);
      expect(events.filter((e) => e.type === 'assistant/message' && e.turn === 5)).toHaveLength(1);
    } finally {
      await store.close();
    }

    const audit = await runDh(['audit', id], env);
    expect(audit.code, describeRun(audit)).toBe(0);
    expect(audit.stdout).toContain('AUDIT PASSED');
    expect(audit.stdout).toContain('history mirror: ok (');
  }, 300_000);

  it('Ctrl-C mid-demo stops its worker (which `dh down` would not find) and exits 130', async () => {
    if (!env) throw new Error('the first test sets up the stack');
    const child = spawn(process.execPath, [DH_BIN, 'demo'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const deadline = Date.now() + 180_000;
    let workerPid: number | undefined;
    while (workerPid === undefined && Date.now() < deadline) {
      workerPid = Number(/worker pid (\d+) ready/.exec(stdout)?.[1]) || undefined;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (workerPid === undefined) throw new Error(`the demo never reported its worker:\n${stdout}`);
    child.kill('SIGINT');
    expect(await exited, stdout).toBe(130);
    expect(stdout).toContain('SIGINT: stopping the demo worker');
    expect(alive(workerPid), `worker ${workerPid} still running after the demo exited`).toBe(false);
  }, 240_000);
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

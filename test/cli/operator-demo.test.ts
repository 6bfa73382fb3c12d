// `dh demo` end to end on the embedded local stack (TEMPORAL_ADDRESS unset, a temp DH_HOME, free
// ports): it exits 0, its session went through every beat, and `dh audit` passes it afterwards.
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../src/local-stack/dev-server.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { cleanEnv, describeRun, runDh, tempHome } from './operator-cli.js';

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
    expect(demo.stdout).toContain(`dh show ${id} --step 3.2`);

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
});

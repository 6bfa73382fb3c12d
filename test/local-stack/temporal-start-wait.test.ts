// The embedded stack's wait for its Temporal dev server (the real CLI, a temp DH_HOME, free ports): a
// server held stopped past 60 s is still waited for (with progress lines) and then used, a server that
// exits fails the start at once with its log's last lines, and DH_TEMPORAL_START_TIMEOUT_S is the ceiling.
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { readWorkerConfig, type WorkerConfig } from '../../src/config/worker-config.js';
import { DhError } from '../../src/core/index.js';
import { freePort } from '../../src/local-stack/dev-server.js';
import { ensureLocalStack, stopLocalStack } from '../../src/local-stack/local-stack.js';
import { alive } from '../../src/local-stack/stack-processes.js';
import { answers } from '../../src/local-stack/stack-temporal.js';
import { DEFAULT_START_CEILING_MS, temporalStartCeilingMs } from '../../src/local-stack/wait-while-alive.js';
import { freezeGroup, thawAll, thawGroup } from '../helpers/freeze-group.js';

/** The variables the stack reads from process.env, saved and restored around each test. */
const STACK_ENV = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_CLI_PATH',
  'DH_TEMPORAL_PORT',
  'DH_TEMPORAL_UI_PORT',
  'DH_TEMPORAL_START_TIMEOUT_S',
] as const;
const saved = new Map(STACK_ENV.map((name) => [name, process.env[name]]));

let home: string;
let port: number;
let config: WorkerConfig;

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'dh-start-wait-'));
  await mkdir(join(home, 'logs'), { recursive: true });
  port = await freePort();
  for (const name of STACK_ENV) delete process.env[name];
  process.env.TEMPORAL_CLI_PATH = inject('temporalCliPath');
  process.env.DH_TEMPORAL_PORT = String(port);
  process.env.DH_TEMPORAL_UI_PORT = '0';
  config = readWorkerConfig({ DH_HOME: home });
});

afterEach(async () => {
  thawAll();
  await stopLocalStack(config);
  for (const [name, value] of saved) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await rm(home, { recursive: true, force: true });
});

const PROGRESS = (pid: number) =>
  new RegExp(
    `^still waiting for the local Temporal server on 127\\.0\\.0\\.1:${port} \\(pid ${pid}, (\\d+) s, log \\+\\d+(\\.\\d)? (B|KB|MB)\\)$`,
  );

describe('the local stack waits for its Temporal server while it is alive', () => {
  it('keeps waiting past 60 s for a server held stopped for 65 s, with progress lines, then uses it', async () => {
    const lines: string[] = [];
    let pid = 0;
    let held: Promise<boolean> | undefined;
    const started = Date.now();
    const stack = await ensureLocalStack(config, {
      startWorker: false,
      log: (line) => lines.push(line),
      onTemporalSpawn: (spawned) => {
        pid = spawned;
        held = freezeGroup(spawned).then(async (stopped) => {
          await sleep(65_000);
          thawGroup(spawned);
          return stopped;
        });
      },
    });
    const tookMs = Date.now() - started;

    expect(pid).toBeGreaterThan(0);
    await expect(held, 'the server was seen stopped').resolves.toBe(true);
    // The old fixed deadline was 60 s; this start took longer and still succeeded.
    expect(tookMs).toBeGreaterThan(65_000);
    expect(stack.address).toBe(`127.0.0.1:${port}`);
    await expect(answers(stack.address, stack.namespace)).resolves.toBe(true);
    const record = JSON.parse(readFileSync(join(home, 'stack.json'), 'utf8')) as { temporal?: { pid: number } };
    expect(record.temporal?.pid).toBe(pid);

    const progress = lines.filter((line) => line.startsWith('still waiting'));
    // One every 10 s while it was stopped: at 10, 20, … 60 s at least.
    expect(progress.length, lines.join('\n')).toBeGreaterThanOrEqual(6);
    const seconds = progress.map((line) => Number(PROGRESS(pid).exec(line)?.[1]));
    expect(
      seconds.every((s) => Number.isInteger(s)),
      progress.join('\n'),
    ).toBe(true);
    expect(seconds).toEqual([...seconds].sort((a, b) => a - b));
    expect(seconds[0]).toBeGreaterThanOrEqual(10);
    expect(seconds.at(-1)).toBeGreaterThanOrEqual(60);
  }, 300_000);

  it('fails at once, quoting the log, when the server exits during the start', async () => {
    // Not a SQLite file: the dev server cannot create its namespaces in it and exits.
    await writeFile(join(home, 'temporal.db'), 'this is not a database file, it is plain text\n'.repeat(100));
    const lines: string[] = [];
    let pid = 0;
    const started = Date.now();
    const error = await ensureLocalStack(config, {
      startWorker: false,
      log: (line) => lines.push(line),
      onTemporalSpawn: (spawned) => (pid = spawned),
    }).then(
      () => null,
      (thrown: unknown) => thrown,
    );
    const tookMs = Date.now() - started;

    expect(error).toBeInstanceOf(DhError);
    expect((error as DhError).code).toBe('LOCAL_STACK_START_FAILED');
    const message = (error as DhError).message;
    expect(message).toMatch(/^the local Temporal server exited \(exit \d+\); see .*temporal\.log:\n/);
    // The log's last lines are quoted: the server's own reason.
    expect(message).toMatch(/file is not a database/);
    expect(pid).toBeGreaterThan(0);
    expect(alive(pid)).toBe(false);
    // It did not wait for the ceiling.
    expect(tookMs).toBeLessThan(DEFAULT_START_CEILING_MS / 2);
  }, 200_000);

  it('gives up at DH_TEMPORAL_START_TIMEOUT_S on a server that stays stopped, and stops it', async () => {
    process.env.DH_TEMPORAL_START_TIMEOUT_S = '12';
    const lines: string[] = [];
    let pid = 0;
    let held: Promise<boolean> | undefined;
    const started = Date.now();
    const error = await ensureLocalStack(config, {
      startWorker: false,
      log: (line) => lines.push(line),
      onTemporalSpawn: (spawned) => {
        pid = spawned;
        held = freezeGroup(spawned);
      },
    }).then(
      () => null,
      (thrown: unknown) => thrown,
    );
    const tookMs = Date.now() - started;

    await expect(held, 'the server was seen stopped').resolves.toBe(true);
    expect(error).toBeInstanceOf(DhError);
    expect((error as DhError).code).toBe('LOCAL_STACK_START_FAILED');
    expect((error as DhError).message).toMatch(
      new RegExp(
        `^the local Temporal server \\(pid ${pid}\\) was still running but did not answer on 127\\.0\\.0\\.1:${port} ` +
          'within 12 s, so it was stopped; set DH_TEMPORAL_START_TIMEOUT_S to wait longer',
      ),
    );
    expect(tookMs).toBeGreaterThanOrEqual(12_000);
    expect(alive(pid)).toBe(false);
    expect(lines.filter((line) => PROGRESS(pid).test(line)).length, lines.join('\n')).toBeGreaterThanOrEqual(1);
    // Nothing recorded: the next start begins afresh.
    expect(existsSync(join(home, 'stack.json'))).toBe(false);
  }, 120_000);

  it.each(['abc', '0', '-5', '1e3', '10s'])(
    'rejects DH_TEMPORAL_START_TIMEOUT_S=%s before starting anything',
    async (value) => {
      process.env.DH_TEMPORAL_START_TIMEOUT_S = value;
      let spawned = false;
      const error = await ensureLocalStack(config, {
        startWorker: false,
        onTemporalSpawn: () => (spawned = true),
      }).then(
        () => null,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(DhError);
      expect((error as DhError).code).toBe('INVALID_CONFIG');
      expect((error as DhError).message).toBe(
        `invalid configuration: DH_TEMPORAL_START_TIMEOUT_S: expected a positive number of seconds, got "${value}"`,
      );
      expect(spawned).toBe(false);
    },
  );

  it('reads the ceiling in seconds, 5 min by default', () => {
    expect(temporalStartCeilingMs({})).toBe(300_000);
    expect(temporalStartCeilingMs({ DH_TEMPORAL_START_TIMEOUT_S: '' })).toBe(300_000);
    expect(temporalStartCeilingMs({ DH_TEMPORAL_START_TIMEOUT_S: '600' })).toBe(600_000);
    expect(temporalStartCeilingMs({ DH_TEMPORAL_START_TIMEOUT_S: ' 2.5 ' })).toBe(2_500);
  });
});

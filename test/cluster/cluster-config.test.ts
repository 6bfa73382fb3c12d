// deploy/temporal, the configuration docs/deploy.md tells operators to run, checked by the real server
// binary: its dynamic config is exactly the project's and has no unknown key, the template renders from the
// environment the tests use, and a missing or wrong server binary fails saying what to do.
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { REQUIRED_DYNAMIC_CONFIG } from '../../src/local-stack/dev-server.js';
import { clusterEnv, clusterServerArgs, DEPLOY_TEMPORAL_DIR } from '../../src/local-stack/temporal-cluster.js';
import { resolveTemporalServer, TEMPORAL_SERVER_VERSION } from '../../src/local-stack/temporal-server-binaries.js';

const run = promisify(execFile);
const DYNAMIC_CONFIG = join(DEPLOY_TEMPORAL_DIR, 'dynamicconfig', 'production.yaml');
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-cluster-config-'));
  dirs.push(dir);
  return dir;
};

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('deploy/temporal: the cluster configuration', () => {
  const server = inject('temporalServerPath');

  it('the dynamic config is exactly REQUIRED_DYNAMIC_CONFIG, and the server knows every key', async () => {
    const parsed = parse(readFileSync(DYNAMIC_CONFIG, 'utf8')) as Record<string, Array<{ value: unknown }>>;
    const values = Object.fromEntries(Object.entries(parsed).map(([key, [entry]]) => [key, entry?.value]));
    expect(values).toEqual(REQUIRED_DYNAMIC_CONFIG);
    const { stdout } = await run(server, ['validate-dynamic-config', DYNAMIC_CONFIG]);
    expect(stdout).not.toMatch(/error|warning/i);
  });

  it('a misspelt key is what the server validation catches (so the check above can fail)', async () => {
    const file = join(tempDir(), 'bad.yaml');
    writeFileSync(file, 'history.transferProcessorMaxPollRSP:\n  - value: 10000\n');
    const outcome = await run(server, ['validate-dynamic-config', file]).then(
      ({ stdout }) => stdout,
      (error: { stdout?: string }) => error.stdout ?? '',
    );
    expect(outcome).toMatch(/unknown key|warning|error/i);
  });

  it('the template renders from the environment the tests start the server with', async () => {
    const env = await clusterEnv({
      binaries: { server, sqlTool: inject('temporalSqlToolPath') },
      db: { address: '127.0.0.1:5999', user: 'dh', password: 'secret', database: 'temporal_x' },
      numHistoryShards: 8,
    });
    // Membership ports go into a SMALLINT column of the PostgreSQL schema.
    for (const key of Object.keys(env).filter((k) => k.endsWith('_PORT')))
      expect(Number(env[key])).toBeLessThan(32_768);
    // `render-config` reads --config as given (`start` joins it to --root): the same files either way.
    expect(clusterServerArgs()).toEqual([
      '--root',
      DEPLOY_TEMPORAL_DIR,
      '--config',
      'config',
      '--env',
      'production',
      '--allow-no-auth',
      'start',
    ]);
    const configDir = join(DEPLOY_TEMPORAL_DIR, 'config');
    const { stdout } = await run(server, ['--config', configDir, '--env', 'production', 'render-config'], {
      env: { ...process.env, ...env },
    });
    expect(stdout).toContain('numHistoryShards: 8');
    expect(stdout).toContain('databaseName: temporal_x');
    expect(stdout).toContain('databaseName: temporal_x_visibility');
    expect(stdout).toContain('connectAddr: 127.0.0.1:5999');
    expect(stdout).toContain(`grpcPort: ${env.TEMPORAL_FRONTEND_PORT}`);
    expect(stdout).toContain(`rpcAddress: 127.0.0.1:${env.TEMPORAL_FRONTEND_PORT}`);
    expect(stdout).toContain(`filepath: ${DYNAMIC_CONFIG}`);
    expect(stdout).toContain('pluginName: postgres12');
  });
});

describe('the server binaries', () => {
  const saved = { ...process.env };
  afterAll(() => {
    process.env = saved;
  });

  it('TEMPORAL_SERVER_PATH without TEMPORAL_SQL_TOOL_PATH is refused, naming both', async () => {
    process.env = { ...saved, TEMPORAL_SERVER_PATH: inject('temporalServerPath'), TEMPORAL_SQL_TOOL_PATH: '' };
    await expect(resolveTemporalServer({ log: () => undefined })).rejects.toThrow(
      /TEMPORAL_SQL_TOOL_PATH is unset: set both TEMPORAL_SERVER_PATH and TEMPORAL_SQL_TOOL_PATH/,
    );
  });

  it('a server binary of another version is refused', async () => {
    const dir = tempDir();
    const fake = join(dir, 'temporal-server');
    writeFileSync(fake, '#!/bin/sh\necho "temporal version 1.20.0"\n');
    chmodSync(fake, 0o755);
    process.env = { ...saved, TEMPORAL_SERVER_PATH: fake, TEMPORAL_SQL_TOOL_PATH: inject('temporalSqlToolPath') };
    await expect(resolveTemporalServer({ log: () => undefined })).rejects.toThrow(
      new RegExp(`not the pinned Temporal server ${TEMPORAL_SERVER_VERSION.replaceAll('.', '\\.')}`),
    );
  });

  it('an empty cache and a Go that cannot build fail with how to get the binaries', async () => {
    const dir = tempDir();
    const fakeGo = join(dir, 'go');
    writeFileSync(fakeGo, '#!/bin/sh\necho "go: no toolchain here" >&2\nexit 1\n');
    chmodSync(fakeGo, 0o755);
    process.env = {
      ...saved,
      TEMPORAL_SERVER_PATH: '',
      TEMPORAL_SQL_TOOL_PATH: '',
      DH_CACHE_DIR: join(dir, 'cache'),
      PATH: `${dir}:${saved.PATH ?? ''}`,
    };
    const failure = await resolveTemporalServer({ log: () => undefined }).then(
      () => null,
      (error: Error) => error.message,
    );
    expect(failure).toContain(`go install go.temporal.io/server/cmd/server@v${TEMPORAL_SERVER_VERSION} `);
    expect(failure).toMatch(/` failed \(exit 1\)/);
    expect(failure).toContain('go: no toolchain here');
    expect(failure).toMatch(
      /install Go \(https:\/\/go\.dev\/doc\/install.*TEMPORAL_SERVER_PATH and TEMPORAL_SQL_TOOL_PATH/s,
    );
  });
});

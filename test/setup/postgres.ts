// A real PostgreSQL for the test run: DH_TEST_POSTGRES_URL when set, otherwise a throwaway cluster in a
// temp dir on a free 127.0.0.1 port (installed with apt-get first when missing and we are root, as on CI).
import { execFile, spawnSync } from 'node:child_process';
import { constants, rmSync } from 'node:fs';
import { access, chown, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { aptInstall } from './apt-install.js';

export interface TestPostgres {
  readonly url: string;
  readonly stop: () => Promise<void>;
  /** SIGKILLs the server (postmaster and backends), as a crash would. Only for a cluster of our own. */
  readonly kill?: () => Promise<void>;
  /** Starts a killed server again on the same data and port (crash recovery runs). */
  readonly restart?: () => Promise<void>;
}

const PG_LIB = '/usr/lib/postgresql';
const DATABASE = 'dh_test';

export interface PostgresOptions {
  /** More server settings, as `name=value` (`-c` options), e.g. a preloaded library for a benchmark. */
  readonly settings?: readonly string[];
  /** A cluster of its own even when DH_TEST_POSTGRES_URL names one (a second cluster, one to kill). */
  readonly own?: boolean;
}

export async function startPostgres(config: PostgresOptions = {}): Promise<TestPostgres> {
  const configured = process.env.DH_TEST_POSTGRES_URL;
  if (configured !== undefined && configured !== '' && config.own !== true)
    return { url: configured, stop: () => Promise.resolve() };

  const asRoot = process.getuid?.() === 0;
  const bin = (await findPostgresBin()) ?? (await installPostgres(asRoot));
  // PostgreSQL refuses to run as root: as root, the cluster belongs to and runs as the `postgres` user.
  const owner = asRoot ? await postgresUser() : null;
  const base = await mkdtemp(join(tmpdir(), 'dh-pg-'));
  if (owner) await chown(base, owner.uid, owner.gid);
  const data = join(base, 'data');
  const log = join(base, 'postgres.log');
  const run = (tool: string, args: readonly string[]) => runTool(owner !== null, join(bin, tool), args);

  let started = false;
  const stopSync = () => {
    if (started) spawnSync(...command(owner !== null, join(bin, 'pg_ctl'), ['-D', data, 'stop', '-m', 'immediate']));
    rmSync(base, { recursive: true, force: true });
  };
  // If the run dies without calling stop, do not leave a server behind.
  process.once('exit', stopSync);
  try {
    await run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync']);
    let port = 0;
    for (let attempt = 1; !started; attempt++) {
      port = await freePort();
      const options = serverOptions(base, port, config);
      try {
        await run('pg_ctl', ['-D', data, '-l', log, '-w', '-t', '30', '-o', options, 'start']);
        started = true;
      } catch (error) {
        // Another process may have taken the port between our probe and the bind: try another one.
        const serverLog = await readFile(log, 'utf8').catch(() => '');
        if (attempt >= 3 || !/could not bind|address already in use/i.test(serverLog)) {
          throw new Error(`pg_ctl start failed; server log:\n${serverLog.slice(-2000)}`, { cause: error });
        }
      }
    }
    const admin = new pg.Client({ connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres` });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${DATABASE}`);
    } finally {
      await admin.end();
    }
    const url = `postgresql://postgres@127.0.0.1:${port}/${DATABASE}`;
    const startOptions = serverOptions(base, port, config);
    const kill = async () => {
      const pid = Number((await readFile(join(data, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      // Stopped first, so it forks nothing while its backends die; then the postmaster itself. No backend is
      // left attached to the shared memory, which would stop the restart.
      process.kill(pid, 'SIGSTOP');
      spawnSync('pkill', ['-KILL', '-P', String(pid)]);
      process.kill(pid, 'SIGKILL');
      for (let i = 0; i < 200 && isAlive(pid); i++) await new Promise((r) => setTimeout(r, 25));
      started = false;
    };
    const restart = async () => {
      await run('pg_ctl', ['-D', data, '-l', log, '-w', '-t', '60', '-o', startOptions, 'start']);
      started = true;
    };
    const stop = async () => {
      process.removeListener('exit', stopSync);
      if (started) {
        started = false;
        await run('pg_ctl', ['-D', data, 'stop', '-m', 'fast', '-w']);
      }
      await rm(base, { recursive: true, force: true });
    };
    return { url, stop, kill, restart };
  } catch (error) {
    process.removeListener('exit', stopSync);
    stopSync();
    throw error;
  }
}

function serverOptions(base: string, port: number, config: PostgresOptions): string {
  return [
    '-F',
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c listen_addresses=127.0.0.1',
    `-c port=${port}`,
    `-c unix_socket_directories=${base}`,
    '-c max_connections=200',
    ...(config.settings ?? []).map((setting) => `-c ${setting}`),
  ].join(' ');
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The bin dir of the newest PostgreSQL under /usr/lib/postgresql that has initdb and pg_ctl. */
async function findPostgresBin(): Promise<string | null> {
  const versions = await readdir(PG_LIB).catch(() => [] as string[]);
  versions.sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
  for (const version of versions) {
    const bin = join(PG_LIB, version, 'bin');
    const usable = await Promise.all(
      ['initdb', 'pg_ctl'].map((tool) =>
        access(join(bin, tool), constants.X_OK).then(
          () => true,
          () => false,
        ),
      ),
    );
    if (usable.every(Boolean)) return bin;
  }
  return null;
}

async function installPostgres(asRoot: boolean): Promise<string> {
  if (!asRoot) {
    throw new Error(
      `PostgreSQL server binaries (initdb, pg_ctl) were not found under ${PG_LIB}/*/bin. The store tests need a ` +
        'real PostgreSQL: install it (Debian/Ubuntu: `sudo apt-get install -y postgresql`), or point the tests at ' +
        'a running server with DH_TEST_POSTGRES_URL=postgresql://user:password@host:port/database',
    );
  }
  await aptInstall(['postgresql'], 'PostgreSQL');
  const bin = await findPostgresBin();
  if (bin === null) throw new Error(`apt-get installed postgresql, but no initdb/pg_ctl appeared under ${PG_LIB}`);
  return bin;
}

async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const passwd = await readFile('/etc/passwd', 'utf8');
  const fields = passwd
    .split('\n')
    .find((line) => line.startsWith('postgres:'))
    ?.split(':');
  if (fields?.[2] === undefined || fields[3] === undefined) {
    throw new Error(
      'running as root but there is no `postgres` user to run PostgreSQL as (the postgresql package creates it)',
    );
  }
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

/** The command line for a PostgreSQL tool, as the `postgres` user when we are root. */
function command(asPostgres: boolean, tool: string, args: readonly string[]): [string, string[]] {
  return asPostgres ? ['runuser', ['-u', 'postgres', '--', tool, ...args]] : [tool, [...args]];
}

function runTool(asPostgres: boolean, tool: string, args: readonly string[]): Promise<string> {
  const [file, argv] = command(asPostgres, tool, args);
  return new Promise((resolve, reject) => {
    // pg_ctl's server keeps our stdio open unless told otherwise; -l sends its output to the log file.
    execFile(file, argv, { timeout: 60_000, env: { ...process.env, LC_ALL: 'C' } }, (error, stdout, stderr) => {
      if (error)
        reject(new Error(`${file} ${argv.join(' ')} failed: ${stderr || stdout || error.message}`, { cause: error }));
      else resolve(stdout);
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('could not find a free port'))));
    });
  });
}

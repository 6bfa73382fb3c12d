// `dh codec-server`: serves Temporal's remote codec protocol with the workers' payload key
// (DH_PAYLOAD_KEY), so the Temporal Web UI (`--ui-codec-endpoint`) and the `temporal` CLI
// (`--codec-endpoint`) show encrypted payloads decoded. Prints its URL alone on stdout.
import { InvalidArgumentError, type Command } from 'commander';
import { DEFAULT_CODEC_SERVER_PORT } from '../../codec/codec-server.js';
import { parsePort } from '../server-command-helpers.js';
import type { CodecServerCommandOptions } from './codec-server-action.js';
import { DEFAULT_UI_ORIGINS } from './default-ui-origins.js';

/**
 * The env var of the workers' payload key: aes-gcm-codec.ts's PAYLOAD_KEY_ENV, which test/cli/cli-start.test.ts
 * checks this equals. Importing that module here would load Temporal's protobufs for every `dh` command.
 */
export const PAYLOAD_KEY_ENV = 'DH_PAYLOAD_KEY';

function collectOrigin(value: string, previous: string[] | undefined): string[] {
  if (value === '*') return [...(previous ?? []), value];
  let origin: string;
  try {
    origin = new URL(value).origin;
  } catch {
    throw new InvalidArgumentError('expected an origin such as http://localhost:8233, or *');
  }
  if (origin === 'null') throw new InvalidArgumentError('expected an http(s) origin such as http://localhost:8233');
  return [...(previous ?? []), origin];
}

export function registerCodecServerCommand(program: Command): void {
  program
    .command('codec-server')
    .description(
      `decode encrypted payloads for the Temporal Web UI and CLI (Temporal's codec-server protocol, key from ${PAYLOAD_KEY_ENV})`,
    )
    .option('--port <n>', 'port to listen on (0 = any free port)', parsePort, DEFAULT_CODEC_SERVER_PORT)
    .option('--host <host>', 'address to listen on (whoever reaches it can decrypt payloads)', '127.0.0.1')
    .option(
      '--origin <url>',
      `a browser origin allowed to call it, repeatable; * allows any (default: ${DEFAULT_UI_ORIGINS.join(', ')})`,
      collectOrigin,
    )
    // Loaded on use (codec-server-action.ts): `dh --help` and the other commands do not pay for its imports.
    .action((options: CodecServerCommandOptions) =>
      import('./codec-server-action.js').then((a) => a.codecServerCommand(options)),
    );
}

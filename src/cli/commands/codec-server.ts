// `dh codec-server`: serves Temporal's remote codec protocol with the workers' payload key
// (DH_PAYLOAD_KEY), so the Temporal Web UI (`--ui-codec-endpoint`) and the `temporal` CLI
// (`--codec-endpoint`) show encrypted payloads decoded. Prints its URL alone on stdout.
import { InvalidArgumentError, type Command } from 'commander';
import { PAYLOAD_KEY_ENV, payloadCodecFromEnv } from '../../codec/aes-gcm-codec.js';
import { DEFAULT_CODEC_SERVER_PORT, startCodecServer } from '../../codec/codec-server.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { cliAction } from '../live/cli-action.js';
import { parsePort, untilSignal } from '../server-command-helpers.js';

/** The local stack's Web UI (gRPC port 7233 + 1000), under both loopback names. */
export const DEFAULT_UI_ORIGINS = ['http://localhost:8233', 'http://127.0.0.1:8233'] as const;

interface CodecServerCommandOptions {
  port: number;
  host: string;
  origin?: string[];
}

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
    .action(
      cliAction(async (options: CodecServerCommandOptions) => {
        const codec = payloadCodecFromEnv();
        if (!codec) {
          throw new CliError(
            `${PAYLOAD_KEY_ENV} is not set: the codec server needs the workers' payload key (32 bytes, base64)`,
            ExitCode.Error,
          );
        }
        const origins = options.origin ?? [...DEFAULT_UI_ORIGINS];
        const server = await startCodecServer({ codec, port: options.port, host: options.host, origins });
        const stop = untilSignal();
        process.stdout.write(`${server.url}\n`);
        process.stderr.write(
          `codec server on ${server.url} (key id ${codec.keyId}; origins ${origins.join(', ')}); Ctrl-C stops it\n` +
            `  Web UI:  temporal server start-dev --ui-codec-endpoint ${server.url}   (or the UI's Codec Server setting)\n` +
            `  CLI:     temporal workflow show --workflow-id session-<id> --codec-endpoint ${server.url}\n`,
        );
        await stop;
        await server.close();
      }),
    );
}

// What `dh codec-server` does; codec-server.ts defines the command and loads this module when it runs.
import { PAYLOAD_KEY_ENV, payloadCodecFromEnv } from '../../codec/aes-gcm-codec.js';
import { startCodecServer } from '../../codec/codec-server.js';
import { CliError, ExitCode } from '../exit-codes.js';
import { cliAction } from '../cli-action.js';
import { untilSignal } from '../server-command-helpers.js';
import { DEFAULT_UI_ORIGINS } from './default-ui-origins.js';

export interface CodecServerCommandOptions {
  port: number;
  host: string;
  origin?: string[];
}

export const codecServerCommand = cliAction(async (options: CodecServerCommandOptions) => {
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
});

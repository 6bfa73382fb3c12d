// `dh scripted-provider`: runs the scripted OpenAI-compatible provider in the foreground, prints its
// base URL (alone on stdout, so scripts can capture it) and serves until SIGINT or SIGTERM.
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { CacheMode } from '../../scripted-provider/script.js';
import { parsePort, untilSignal } from '../server-command-helpers.js';

interface ScriptedProviderOptions {
  script: string;
  port: number;
  host: string;
  record?: string;
  cache?: CacheMode;
  rpm?: number;
  tpm?: number;
  burstSeconds?: number;
}

function parsePositiveInteger(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) === 0) throw new InvalidArgumentError('expected a positive integer');
  return Number(value);
}

function parsePositiveNumber(value: string): number {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number <= 0)
    throw new InvalidArgumentError('expected a positive number');
  return number;
}

export function registerScriptedProviderCommand(program: Command): void {
  program
    .command('scripted-provider')
    .description('serve a scripted OpenAI-compatible chat-completions API on loopback (tests, benchmarks, demos)')
    .requiredOption('--script <file>', 'script file (.json, .yaml or .yml)')
    .option('--port <n>', 'port to listen on (0 = any free port)', parsePort, 0)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--record <file.jsonl>', 'append every request, with the status it was answered, to this JSONL file')
    .addOption(
      new Option('--cache <mode>', "prefix-cache simulation (default: the script's)").choices([
        'deepseek',
        'openai',
        'off',
      ]),
    )
    .option('--rpm <n>', "rate quota: requests per minute per API key (overrides the script's)", parsePositiveInteger)
    .option('--tpm <n>', "rate quota: tokens per minute per API key (overrides the script's)", parsePositiveInteger)
    .option(
      '--burst-seconds <s>',
      "rate quota: seconds' worth of the per-minute limits allowed at once (default 1)",
      parsePositiveNumber,
    )
    .action(async (options: ScriptedProviderOptions) => {
      const quota = {
        ...(options.rpm !== undefined ? { requestsPerMinute: options.rpm } : {}),
        ...(options.tpm !== undefined ? { tokensPerMinute: options.tpm } : {}),
        ...(options.burstSeconds !== undefined ? { burstSeconds: options.burstSeconds } : {}),
      };
      // Loaded here, not at startup: `dh --help` and the other commands do not pay for its imports.
      const { startScriptedProvider } = await import('../../scripted-provider/start-scripted-provider.js');
      const provider = await startScriptedProvider({
        script: options.script,
        port: options.port,
        host: options.host,
        ...(options.record !== undefined ? { recordFile: options.record } : {}),
        ...(options.cache !== undefined ? { cache: options.cache } : {}),
        ...(Object.keys(quota).length > 0 ? { quota } : {}),
      });
      const stop = untilSignal();
      process.stdout.write(`${provider.url}\n`);
      process.stderr.write(
        `scripted provider listening on ${provider.url} (script ${options.script}); Ctrl-C stops it\n`,
      );
      const signal = await stop;
      await provider.close();
      const stats = provider.stats();
      process.stderr.write(
        `scripted provider stopped (${signal}): ${stats.requests} request(s), ${stats.rejected} rejected, ` +
          `${stats.exhausted} after the script was exhausted, ${stats.rateLimited} refused by the rate quota\n`,
      );
    });
}

// `dh scripted-provider`: runs the scripted OpenAI-compatible provider in the foreground, prints its
// base URL (alone on stdout, so scripts can capture it) and serves until SIGINT or SIGTERM.
import { Option, type Command } from 'commander';
import type { CacheMode } from '../../scripted-provider/script.js';
import { parsePort, untilSignal } from '../server-command-helpers.js';

interface ScriptedProviderOptions {
  script: string;
  port: number;
  host: string;
  record?: string;
  cache?: CacheMode;
}

export function registerScriptedProviderCommand(program: Command): void {
  program
    .command('scripted-provider')
    .description('serve a scripted OpenAI-compatible chat-completions API on loopback (tests, benchmarks, demos)')
    .requiredOption('--script <file>', 'script file (.json, .yaml or .yml)')
    .option('--port <n>', 'port to listen on (0 = any free port)', parsePort, 0)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--record <file.jsonl>', 'append every request received to this JSONL file')
    .addOption(
      new Option('--cache <mode>', "prefix-cache simulation (default: the script's)").choices([
        'deepseek',
        'openai',
        'off',
      ]),
    )
    .action(async (options: ScriptedProviderOptions) => {
      // Loaded here, not at startup: `dh --help` and the other commands do not pay for its imports.
      const { startScriptedProvider } = await import('../../scripted-provider/start-scripted-provider.js');
      const provider = await startScriptedProvider({
        script: options.script,
        port: options.port,
        host: options.host,
        ...(options.record !== undefined ? { recordFile: options.record } : {}),
        ...(options.cache !== undefined ? { cache: options.cache } : {}),
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
          `${stats.exhausted} after the script was exhausted\n`,
      );
    });
}

// What `dh ui` does; ui-command.ts defines the command and loads this module when it runs. Off loopback
// it prints a generated token once (later starts read $DH_HOME/ui-token and do not print it).
import { spawn } from 'node:child_process';
import { configuredProfile } from '../operator/operator-actions.js';
import { CONSOLE_UI_DIR } from '../../console/console-ui-dir.js';
import { startConsoleServer } from '../../console/console-server.js';
import { isLoopbackHost } from '../../console/console-security.js';
import { loadOrCreateUiToken } from '../../console/ui-token.js';
import { DhError } from '../../core/index.js';
import { AttachmentStore, attachmentRoot } from '../../stores/attachment-store.js';
import { openDeltaChannel } from '../../streaming/open-delta-channel.js';
import { openAgentCatalog } from '../../agents/open-agent-catalog.js';
import { cliAction } from '../cli-action.js';
import { MISSING_API_KEY, openCliContext, type CliContext } from '../cli-context.js';
import { untilSignal } from '../server-command-helpers.js';

export interface UiCommandOptions {
  port: number;
  host: string;
  open?: boolean;
}

export const uiCommand = cliAction(async (options: UiCommandOptions) => {
  const ctx = await openContext();
  const channel = openDeltaChannel(ctx.config.store, {
    onError: (error) => void process.stderr.write(`dh: live channel: ${String(error)}\n`),
  });
  const agents = await openAgentCatalog(ctx.config.store).catch(async (error: unknown) => {
    await channel.close();
    await ctx.close();
    throw error;
  });
  try {
    const token = isLoopbackHost(options.host) ? null : loadOrCreateUiToken(ctx.config.home);
    const profile = configuredProfile(ctx.config);
    const attachments = new AttachmentStore(attachmentRoot(ctx.config));
    const server = await startConsoleServer({
      store: ctx.store,
      agents,
      channel,
      sessions: ctx.sessions,
      uiDir: CONSOLE_UI_DIR,
      derive: {
        ...(profile !== undefined ? { profile } : {}),
        readAttachment: (ref) => attachments.get(ref),
      },
      readAttachment: (ref) => attachments.get(ref),
      host: options.host,
      port: options.port,
      token: token?.token ?? null,
    });
    const stop = untilSignal();
    process.stdout.write(`${server.url}\n`);
    if (token?.created === true) {
      process.stderr.write(
        `dh: API token (saved to ${token.file ?? '?'}, shown only now): ${token.token}\n` +
          `    send it as Authorization: Bearer <token>\n`,
      );
    } else if (token !== null) {
      process.stderr.write(
        `dh: the API needs the token ${token.file !== null ? `in ${token.file}` : 'in DH_UI_TOKEN'}\n`,
      );
    }
    process.stderr.write(`dh: web console on ${server.url} (Temporal ${ctx.stack.address}); Ctrl-C stops it\n`);
    if (options.open === true) openBrowser(server.url);
    await stop;
    await server.close();
  } finally {
    await agents.close();
    await channel.close();
    await ctx.close();
  }
});

/** With a provider key the local worker starts too; without one the console still shows and steers sessions. */
async function openContext(): Promise<CliContext> {
  try {
    return await openCliContext();
  } catch (error) {
    if (!(error instanceof DhError) || error.code !== MISSING_API_KEY) throw error;
    process.stderr.write(`dh: ${error.message}; no local worker started (sessions run only where a worker runs)\n`);
    return openCliContext({ startWorker: false });
  }
}

function openBrowser(url: string): void {
  const command = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  const child = spawn(command, [url], { stdio: 'ignore', detached: true });
  child.on('error', () => void process.stderr.write(`dh: could not open a browser; visit ${url}\n`));
  child.unref();
}

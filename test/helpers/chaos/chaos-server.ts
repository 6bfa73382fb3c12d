// A chaos trial's Temporal dev server: its state in a db file, so it can be SIGKILLed and restarted on
// the same file and port, and continue-as-new suggested so early that practically every turn boundary
// hands over to a new run.
import { readFileSync } from 'node:fs';
import { startDevServer, type DevServer } from '../../../src/local-stack/dev-server.js';
import { sleep } from './chaos-messages.js';

/**
 * Server-side: continue-as-new is suggested once a run's history holds this many events — after a
 * step or two, so practically every turn boundary hands over to a new run, and a kill near a turn end
 * is a kill around a continue-as-new. (An idle new run holds 4: it never loops.)
 */
export const SUGGEST_CONTINUE_AS_NEW_AT = 12;

/**
 * A dev server keeping its state in `dbFile`; with `port`, a restart of one that was killed there. A
 * server that fails to start is tried again (a restart: the killed server's sockets may take a moment to
 * go; a first start: a server starting among many others, each picking ports, has been seen to panic);
 * the panic's first lines from `logFile` go into the error and into `onRetry`.
 */
export async function startChaosServer(
  cliPath: string,
  dbFile: string,
  logFile: string,
  port?: number,
  onRetry?: (why: string) => void,
): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServer({
        cliPath,
        dbFile,
        logFile,
        ...(port !== undefined ? { port } : {}),
        dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW_AT },
      });
    } catch (error) {
      const why = `${firstLine(error)}${panicOf(logFile)}`;
      if (attempt >= (port === undefined ? 3 : 10)) throw new Error(why, { cause: error });
      onRetry?.(why);
      await sleep(500);
    }
  }
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
}

/** The lines of the server's log that say why it died (its output tail in the error is mostly a Go stack). */
function panicOf(logFile: string): string {
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return '';
  }
  const lines = text.split('\n').filter((line) => /panic|fatal|address already in use|error/i.test(line));
  return lines.length > 0 ? `\n${lines.slice(-6).join('\n').slice(0, 2_000)}` : '';
}

// Shared pieces of the CLI commands that run a server in the foreground (scripted provider, codec
// server): port parsing and waiting for Ctrl-C / SIGTERM.
import { InvalidArgumentError } from 'commander';

/** A commander option parser for a TCP port (0 = any free port). */
export function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535)
    throw new InvalidArgumentError('expected a port number 0-65535 (0 = any free port)');
  return port;
}

/** Resolves with the first SIGINT or SIGTERM, then stops listening for them. */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

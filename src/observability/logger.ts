// Structured logs: one JSON object per line (time, level, message, and the session / turn / step it
// concerns), to stderr by default — the background worker's stderr is $DH_HOME/logs/worker.log.
// The level comes from DH_LOG_LEVEL (debug | info | warn | error | silent; default info).

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Readonly<Record<string, string | number | boolean | null | undefined>>;

export interface Logger {
  readonly level: LogLevel | 'silent';
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line (e.g. `{ sessionId }`). */
  child(fields: LogFields): Logger;
}

const RANK: Readonly<Record<LogLevel | 'silent', number>> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 };

export interface LoggerOptions {
  readonly level?: LogLevel | 'silent';
  /** Where a finished line goes (default: stderr). */
  readonly write?: (line: string) => void;
  readonly fields?: LogFields;
}

/** The level DH_LOG_LEVEL names; an unknown value is a one-line configuration error. */
export function logLevelFromEnv(env: NodeJS.ProcessEnv = process.env): LogLevel | 'silent' {
  const value = (env.DH_LOG_LEVEL ?? '').trim().toLowerCase();
  if (value === '') return 'info';
  if (value in RANK) return value as LogLevel | 'silent';
  throw new Error(`invalid configuration: DH_LOG_LEVEL: expected debug, info, warn, error or silent, got "${value}"`);
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? logLevelFromEnv();
  const write = options.write ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const base = options.fields ?? {};
  const emit = (at: LogLevel, message: string, fields: LogFields | undefined): void => {
    if (RANK[at] < RANK[level]) return;
    const line: Record<string, unknown> = { time: new Date().toISOString(), level: at, msg: message };
    for (const [key, value] of Object.entries({ ...base, ...fields })) if (value !== undefined) line[key] = value;
    try {
      write(JSON.stringify(line));
    } catch {
      // Logging never breaks the caller.
    }
  };
  return {
    level,
    debug: (message, fields) => emit('debug', message, fields),
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    error: (message, fields) => emit('error', message, fields),
    child: (fields) => createLogger({ level, write, fields: { ...base, ...fields } }),
  };
}

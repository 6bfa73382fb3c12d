// Runs a program in a real pseudo-terminal (node-pty) and renders everything it prints in a headless
// xterm of the same size, so a test can type keys and assert on the screen a user would see; every output
// chunk is timestamped too, for an asciicast of the run (test/helpers/asciicast.ts).
import xtermHeadless from '@xterm/headless';
import { spawn } from 'node-pty';

// @xterm/headless is CommonJS whose exports Node's ESM loader cannot detect: only its default import works.
const { Terminal } = xtermHeadless;
type Terminal = InstanceType<typeof Terminal>;

/** Bytes a terminal sends for these keys (xterm's defaults, normal cursor-key mode). */
export const KEYS = {
  ENTER: '\r',
  /** Ctrl-J: a bare newline, what many TUIs read as "insert a line" rather than "submit". */
  CTRL_J: '\n',
  TAB: '\t',
  ESC: '\x1b',
  CTRL_D: '\x04',
  CTRL_C: '\x03',
  BACKSPACE: '\x7f',
  UP: '\x1b[A',
  DOWN: '\x1b[B',
  RIGHT: '\x1b[C',
  LEFT: '\x1b[D',
} as const;

export interface StartPtyOptions {
  readonly cols?: number;
  readonly rows?: number;
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** TERM for the program (default xterm-256color: the emulator is an xterm). */
  readonly term?: string;
  /** Lines the emulator keeps above the screen (default 10 000). */
  readonly scrollback?: number;
}

/** What the emulator shows: the screen's rows, and everything printed (scrollback, then the screen). */
export interface ScreenView {
  /** The visible rows, right-trimmed, always `rows` of them. */
  readonly lines: readonly string[];
  /** `lines` joined with newlines. */
  readonly text: string;
  /** Scrollback and screen with soft-wrapped rows rejoined, right-trimmed, trailing blank rows dropped. */
  readonly all: string;
}

export interface WaitForOptions {
  /** Default 10 s. */
  readonly timeoutMs?: number;
  /** Which text a RegExp is matched against: the screen (default) or scrollback + screen. */
  readonly scope?: 'screen' | 'all';
}

export interface PtyExit {
  readonly exitCode: number;
  /** The signal number that ended the program, 0 when none did. */
  readonly signal: number;
}

/** One output chunk (or input, or resize) at `ms` since the start; `data` of a resize is `COLSxROWS`. */
export interface PtyEvent {
  readonly ms: number;
  readonly kind: 'o' | 'i' | 'r';
  readonly data: string;
}

export interface PtyRecording {
  /** Wall-clock start (ms since the epoch). */
  readonly startedAt: number;
  /** Size at the start (resizes are `r` events). */
  readonly cols: number;
  readonly rows: number;
  readonly term: string;
  readonly events: readonly PtyEvent[];
}

export interface PtyTerminal {
  readonly pid: number;
  /** Sends raw bytes as typed keys (see KEYS). */
  write(data: string): void;
  /** Resolves once the emulator has processed every byte received so far. */
  settled(): Promise<void>;
  /** The visible screen as right-trimmed rows, after everything received so far is processed. */
  screen(): Promise<string[]>;
  view(): Promise<ScreenView>;
  /** Waits until the screen matches; throws with the screen and the raw output tail on timeout or exit. */
  waitFor(match: RegExp | ((view: ScreenView) => boolean), options?: WaitForOptions): Promise<ScreenView>;
  /** Resizes the pty (the program gets SIGWINCH) and the emulator together. */
  resize(cols: number, rows: number): Promise<void>;
  readonly exited: Promise<PtyExit>;
  /** Signals the program's process group (default SIGHUP, what closing a terminal window sends). */
  kill(signal?: NodeJS.Signals): void;
  /** The last raw output (up to 64 KiB), escape sequences included. */
  output(): string;
  recording(): PtyRecording;
  /** Kills the program if it still runs, waits for it, and frees the emulator. */
  close(): Promise<void>;
}

const RAW_TAIL = 64 * 1024;

/** Programs not yet seen to exit: killed when this process exits, so none outlives a failed test. */
const running = new Set<number>();
process.once('exit', () => {
  for (const pid of running) signalGroup(pid, 'SIGKILL');
});

export function startPty(command: string, args: readonly string[], options: StartPtyOptions = {}): PtyTerminal {
  const cols = options.cols ?? 80;
  const rows = options.rows ?? 24;
  const term = options.term ?? 'xterm-256color';
  const pty = spawn(command, [...args], {
    name: term,
    cols,
    rows,
    cwd: options.cwd ?? process.cwd(),
    env: ptyEnv(options.env ?? process.env, term),
  });
  running.add(pty.pid);
  const emulator = new Terminal({ cols, rows, scrollback: options.scrollback ?? 10_000, allowProposedApi: true });
  const startedAt = Date.now();
  const events: PtyEvent[] = [];
  let raw = '';
  let exited = false;
  // Set once the exit is seen and the output before it parsed: no screen change can follow.
  let finished = false;
  // The emulator parses asynchronously, in order: the promise of the last write stands for all before it.
  let lastWrite: Promise<void> = Promise.resolve();
  const feed = (data: string) => {
    lastWrite = new Promise((resolve) => emulator.write(data, resolve));
  };
  pty.onData((data) => {
    events.push({ ms: Date.now() - startedAt, kind: 'o', data });
    raw = (raw + data).slice(-RAW_TAIL);
    feed(data);
  });
  // The emulator answers the program's queries (cursor position, device attributes) as a real one would.
  emulator.onData((reply) => {
    if (!exited) pty.write(reply);
  });
  const exitedPromise = new Promise<PtyExit>((resolve) => {
    pty.onExit(({ exitCode, signal }) => {
      exited = true;
      running.delete(pty.pid);
      // Output read in the same turn as the exit is still being parsed: resolve with the final screen.
      setImmediate(
        () =>
          void settled().then(() => {
            finished = true;
            resolve({ exitCode, signal: signal ?? 0 });
          }),
      );
    });
  });

  const settled = async (): Promise<void> => {
    let seen: Promise<void> | undefined;
    while (seen !== lastWrite) {
      seen = lastWrite;
      await seen;
    }
  };
  const view = async (): Promise<ScreenView> => {
    await settled();
    return viewOf(emulator);
  };
  const describe = (why: string, v: ScreenView) =>
    `${why}\n--- screen (${emulator.cols}x${emulator.rows}) ---\n${v.text}\n--- raw output tail ---\n` +
    JSON.stringify(raw.slice(-2_000));

  return {
    pid: pty.pid,
    write: (data) => {
      if (exited) throw new Error(`write after the program exited: ${JSON.stringify(data)}`);
      events.push({ ms: Date.now() - startedAt, kind: 'i', data });
      pty.write(data);
    },
    settled,
    screen: async () => [...(await view()).lines],
    view,
    waitFor: async (match, waitOptions = {}) => {
      const timeoutMs = waitOptions.timeoutMs ?? 10_000;
      const matches =
        typeof match === 'function'
          ? match
          : (v: ScreenView) => match.test(waitOptions.scope === 'all' ? v.all : v.text);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // Read before the view: finished here means this view is the final screen.
        const gone = finished;
        const v = await view();
        if (matches(v)) return v;
        if (gone) throw new Error(describe(`the program exited before the screen matched ${String(match)}`, v));
        if (Date.now() > deadline)
          throw new Error(describe(`timed out after ${timeoutMs} ms waiting for ${String(match)}`, v));
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    resize: async (newCols, newRows) => {
      // Output printed at the old size is parsed at the old size before the emulator changes.
      await settled();
      emulator.resize(newCols, newRows);
      if (!exited) pty.resize(newCols, newRows);
      events.push({ ms: Date.now() - startedAt, kind: 'r', data: `${newCols}x${newRows}` });
    },
    exited: exitedPromise,
    kill: (signal = 'SIGHUP') => {
      if (!exited) signalGroup(pty.pid, signal);
    },
    output: () => raw,
    recording: () => ({ startedAt, cols, rows, term, events: [...events] }),
    close: async () => {
      if (!exited) {
        signalGroup(pty.pid, 'SIGHUP');
        const timer = setTimeout(() => signalGroup(pty.pid, 'SIGKILL'), 5_000);
        await exitedPromise;
        clearTimeout(timer);
      }
      await settled();
      emulator.dispose();
    },
  };
}

/** The program's environment: string values only, TERM of the emulator, no size variables that would override the pty's. */
function ptyEnv(env: NodeJS.ProcessEnv, term: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined || key === 'COLUMNS' || key === 'LINES') continue;
    out[key] = value;
  }
  out.TERM = term;
  return out;
}

/** node-pty starts the program as a session leader: its pid is also its process group's id. */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

function viewOf(emulator: Terminal): ScreenView {
  const active = emulator.buffer.active;
  const lines: string[] = [];
  for (let y = 0; y < emulator.rows; y++) lines.push(rowText(active.getLine(active.baseY + y), true));
  // With the alternate screen up, what was printed before it is still in the normal buffer.
  const printed = joinWrapped(emulator.buffer.normal);
  const all = active.type === 'normal' ? printed : [...printed, ...lines];
  while (all.length > 0 && all[all.length - 1] === '') all.pop();
  return { lines, text: lines.join('\n'), all: all.join('\n') };
}

type Buffer = Terminal['buffer']['normal'];
type BufferLine = NonNullable<ReturnType<Buffer['getLine']>>;

/** xterm's own trim keeps spaces the program printed; a test should not care whether a blank was printed or erased. */
function rowText(line: BufferLine | undefined, trim: boolean): string {
  const text = line?.translateToString(trim) ?? '';
  return trim ? text.trimEnd() : text;
}

function joinWrapped(buffer: Buffer): string[] {
  const out: string[] = [];
  for (let y = 0; y < buffer.length; y++) {
    const line = buffer.getLine(y);
    if (line === undefined) continue;
    // A row that continues on the next one keeps its trailing spaces: they were printed, not padding.
    const text = rowText(line, buffer.getLine(y + 1)?.isWrapped !== true);
    if (line.isWrapped && out.length > 0) out[out.length - 1] += text;
    else out.push(text);
  }
  return out;
}

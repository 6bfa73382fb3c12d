// Sends a request whose body is far larger than a server accepts, over a raw socket, framed as a client
// chooses (Content-Length, chunked, or a Content-Length that lies), and reads the answer while it sends: the
// body is made as it goes (never held whole), sending stops once an answer arrives, the server closes, or
// `giveUpAfter` bytes went out without either (a server that reads on and on).
import { connect, type Socket } from 'node:net';

export type Framing = 'content-length' | 'chunked';

export interface OversizedRequest {
  readonly url: string;
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly framing: Framing;
  /** The body the client offers to send, in bytes. */
  readonly offered: number;
  /** The Content-Length header when framing is `content-length` (default: `offered`, the truth). */
  readonly declared?: number;
  /** Stop sending after this many body bytes without an answer. */
  readonly giveUpAfter: number;
}

export interface OversizedAnswer {
  /** The first answer's status (0: none came). */
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Body bytes the client had written when it stopped. */
  readonly sent: number;
  /** It stopped because it had sent `giveUpAfter` bytes and no answer had come. */
  readonly gaveUp: boolean;
}

const CHUNK = 64 * 1024;

export async function sendOversizedBody(request: OversizedRequest): Promise<OversizedAnswer> {
  const url = new URL(request.url);
  const socket = connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const reader = answerReader(socket);
  const framing =
    request.framing === 'chunked'
      ? { 'transfer-encoding': 'chunked' }
      : { 'content-length': String(request.declared ?? request.offered) };
  const head = Object.entries({ host: url.host, ...request.headers, ...framing })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(`${request.method ?? 'POST'} ${url.pathname}${url.search} HTTP/1.1\r\n${head}\r\n`);
  const filler = Buffer.alloc(CHUNK, 'a');
  let sent = 0;
  let gaveUp = false;
  while (!reader.done() && sent < request.offered) {
    if (sent >= request.giveUpAfter) {
      gaveUp = true;
      break;
    }
    const part = filler.subarray(0, Math.min(CHUNK, request.offered - sent));
    const framed = request.framing === 'chunked' ? [`${part.length.toString(16)}\r\n`, part, '\r\n'] : [part];
    let flushed = true;
    for (const piece of framed) flushed = socket.write(piece) && flushed;
    sent += part.length;
    // Let the answer be read between writes; wait for the socket to drain (or the answer, or a close).
    if (!flushed) await reader.drainOrDone();
    else await new Promise((resolve) => setImmediate(resolve));
  }
  if (!gaveUp && !reader.done() && request.framing === 'chunked') socket.write('0\r\n\r\n');
  const answer = gaveUp ? null : await reader.answer();
  socket.destroy();
  return { status: answer?.status ?? 0, headers: answer?.headers ?? {}, body: answer?.body ?? '', sent, gaveUp };
}

interface ParsedAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Reads the first HTTP answer off the socket (its body by Content-Length, or to the close). */
function answerReader(socket: Socket) {
  let buffer = Buffer.alloc(0);
  let parsed: ParsedAnswer | null = null;
  let closed = false;
  let drains = 0;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of [...waiters]) w();
  };
  const tryParse = () => {
    const end = buffer.indexOf('\r\n\r\n');
    if (end < 0 || parsed !== null) return;
    const [statusLine = '', ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = headers['content-length'];
    const body = buffer.subarray(end + 4);
    if (length === undefined ? !closed : body.length < Number(length)) return;
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
    parsed = {
      status,
      headers,
      body: body.subarray(0, length === undefined ? body.length : Number(length)).toString('utf8'),
    };
  };
  socket.on('data', (data: Buffer) => {
    buffer = Buffer.concat([buffer, data]);
    tryParse();
    wake();
  });
  // A reset while the client still writes is how a server may end a refused upload: the answer came before it.
  socket.on('error', () => undefined);
  socket.on('close', () => {
    closed = true;
    tryParse();
    wake();
  });
  socket.on('drain', () => {
    drains++;
    wake();
  });
  const until = (ready: () => boolean) =>
    new Promise<void>((resolve) => {
      if (ready()) return resolve();
      const check = () => {
        if (!ready()) return;
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
    });
  return {
    done: () => parsed !== null || closed,
    drainOrDone: () => {
      const before = drains;
      return until(() => drains > before || parsed !== null || closed);
    },
    answer: async (): Promise<ParsedAnswer | null> => {
      await until(() => parsed !== null || closed);
      return parsed;
    },
  };
}

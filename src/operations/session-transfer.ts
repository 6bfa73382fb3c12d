// A session log as JSONL for `dh export` / `dh import` (a header, then one event per line with its chain digest
// and MAC, attachments copied into `<file>.attachments/`), and creating a session from a log (import, fork).
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { AttachmentRef, DhError, ErrorCode, parseEvent, Session, type SessionEvent } from '../core/index.js';
import type { AttachmentStore } from '../stores/attachment-store.js';
import {
  AFTER_UNCHAINED,
  ROOT_ANCHOR,
  verifyChain,
  type ChainLink,
  type ChainVerification,
} from '../stores/log-chain.js';
import { LOG_KEY_ENV, type LogKey } from '../stores/log-key.js';
import { nativeEventDigest } from '../stores/native-sha256.js';
import type { SessionStore } from '../stores/session-store.js';
import { messageOf } from '../stores/event-row.js';
import { EXPORT_VERSION, ExportHeader, ExportLine, isExportHeader } from './session-export-format.js';

export const IMPORT_INVALID = 'IMPORT_INVALID';

export { attachmentRoot } from '../stores/attachment-store.js';

/** The directory that travels with an exported file. */
export function attachmentsDirFor(file: string): string {
  return `${file}.attachments`;
}

/** Every attachment reference in the events (user content, queued messages, replaces, header prefixes). */
export function attachmentRefs(events: readonly SessionEvent[]): AttachmentRef[] {
  const found = new Map<string, AttachmentRef>();
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    const record = value as Record<string, unknown>;
    if (record.type === 'image' && 'attachment' in record) {
      const ref = AttachmentRef.safeParse(record.attachment);
      if (ref.success && !found.has(ref.data.id)) found.set(ref.data.id, ref.data);
    }
    for (const child of Object.values(record)) visit(child);
  };
  for (const event of events) visit(event);
  return [...found.values()];
}

export function toJsonl(events: readonly SessionEvent[]): string {
  return events.map((event) => `${JSON.stringify(event)}\n`).join('');
}

/** Copies the referenced attachments between stores; returns the ids that could not be copied (and why). */
export async function copyAttachments(
  refs: readonly AttachmentRef[],
  from: AttachmentStore,
  to: AttachmentStore,
): Promise<{ copied: number; missing: string[] }> {
  let copied = 0;
  const missing: string[] = [];
  for (const ref of refs) {
    try {
      await to.put(await from.get(ref), ref.mediaType);
      copied++;
    } catch (error) {
      missing.push(`${ref.id}: ${messageOf(error)}`);
    }
  }
  return { copied, missing };
}

/** A log file read and verified by `readLogFile`. */
export interface ImportedLog {
  readonly sessionId: string;
  readonly events: SessionEvent[];
  /** 2: a header and chained lines; 1: bare events (written before the chain), nothing to verify. */
  readonly version: 1 | 2;
  /** The file's chain anchor (version 2; null when the log predates the chain). */
  readonly chainAnchor: string | null;
  /** What the chain check found (version 2), MACs included when a key was given. */
  readonly chain: ChainVerification | null;
}

/**
 * Reads and validates a JSONL log: every line must be JSON and a valid event with seq = its position
 * (parseEvent); in a version-2 file every chain digest must follow from its event and the one before, the
 * header must name the file's head and chain head, and with `key` every event's MAC must verify (a file
 * without MACs, version 1 included, is refused then: the store would MAC what nobody vouched for); the
 * whole must be a structurally valid log (Session). Errors name the file, the line and the seq.
 */
export async function readLogFile(file: string, options: { readonly key?: LogKey } = {}): Promise<ImportedLog> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new DhError(IMPORT_INVALID, `${file}: cannot read: ${messageOf(error)}`, { file });
  }
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (lines.length === 0) throw new DhError(IMPORT_INVALID, `${file}: the file holds no events`, { file });
  const first = parseLine(file, lines[0] ?? '', 1);
  if (isExportHeader(first)) return readChainedLog(file, first, lines.slice(1), options.key);
  if (options.key !== undefined) {
    throw new DhError(
      IMPORT_INVALID,
      `${file}: an export of format 1 (one bare event per line) has no chain and no MACs, so nothing in it verifies ` +
        `under ${LOG_KEY_ENV}; import it without ${LOG_KEY_ENV} to accept it unverified`,
      { file },
    );
  }
  const sessionId =
    first !== null && typeof first === 'object' && 'sessionId' in first && typeof first.sessionId === 'string'
      ? first.sessionId
      : '?';
  const events: SessionEvent[] = [];
  lines.forEach((line, index) => {
    const raw = index === 0 ? first : parseLine(file, line, index + 1);
    try {
      events.push(parseEvent(sessionId, raw, index));
    } catch (error) {
      throw new DhError(IMPORT_INVALID, `${file} line ${index + 1} (seq ${index}): ${problemOf(error)}`, {
        file,
        line: index + 1,
        seq: index,
      });
    }
  });
  validateStructure(file, sessionId, events, 1);
  return { sessionId, events, version: 1, chainAnchor: null, chain: null };
}

/** A version-2 file: line 1 is the header, line `seq + 2` holds event `seq`. */
function readChainedLog(file: string, first: unknown, lines: readonly string[], key: LogKey | undefined): ImportedLog {
  const parsedHeader = ExportHeader.safeParse(first);
  if (!parsedHeader.success) {
    const issue = parsedHeader.error.issues[0];
    throw new DhError(
      IMPORT_INVALID,
      `${file} line 1: not a version ${EXPORT_VERSION} export header: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`,
      { file, line: 1 },
    );
  }
  const header = parsedHeader.data;
  const { sessionId } = header;
  if (lines.length === 0) throw new DhError(IMPORT_INVALID, `${file}: the file holds no events`, { file });
  const events: SessionEvent[] = [];
  const links: ChainLink[] = [];
  lines.forEach((text, seq) => {
    const line = seq + 2;
    const parsed = ExportLine.safeParse(parseLine(file, text, line));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw invalidAt(
        file,
        seq,
        2,
        `not an event line: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`,
      );
    }
    let event: SessionEvent;
    try {
      event = parseEvent(sessionId, parsed.data.event, seq);
    } catch (error) {
      throw invalidAt(file, seq, 2, problemOf(error));
    }
    events.push(event);
    links.push({ seq, at: event.at, digest: nativeEventDigest(event), chain: parsed.data.chain, mac: parsed.data.mac });
  });
  if (header.head !== events.length) {
    throw new DhError(
      IMPORT_INVALID,
      `${file} line 1: the header says ${header.head} event(s), the file holds ${events.length}: lines were cut or added`,
      { file, line: 1 },
    );
  }
  const chain = verifyChain({ anchor: header.chainAnchor, links }, key !== undefined ? { key } : {});
  if (chain.broken !== null) throw invalidAt(file, chain.broken.seq, 2, `chain: ${chain.broken.problem}`);
  if (chain.head !== header.chainHead) {
    throw new DhError(
      IMPORT_INVALID,
      `${file} line 1: the header's chain head ${header.chainHead ?? 'null'} is not the last event's (${chain.head ?? 'null'})`,
      { file, line: 1 },
    );
  }
  const start = events[0];
  const isFork = start?.type === 'session/start' && start.parent !== undefined;
  if (!isFork && header.chainAnchor !== null && header.chainAnchor !== ROOT_ANCHOR) {
    throw invalidAt(
      file,
      0,
      2,
      `chain: the anchor ${header.chainAnchor} of a session that is not a fork is not the root anchor`,
    );
  }
  validateStructure(file, sessionId, events, 2);
  return { sessionId, events, version: 2, chainAnchor: header.chainAnchor, chain };
}

function invalidAt(file: string, seq: number, firstEventLine: number, problem: string): DhError {
  const line = seq + firstEventLine;
  return new DhError(IMPORT_INVALID, `${file} line ${line} (seq ${seq}): ${problem}`, { file, line, seq });
}

function parseLine(file: string, line: string, lineNumber: number): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch (error) {
    throw new DhError(IMPORT_INVALID, `${file} line ${lineNumber}: not JSON: ${messageOf(error)}`, {
      file,
      line: lineNumber,
    });
  }
}

/** `firstEventLine`: the line of seq 0 (1 in a version-1 file, 2 after a version-2 header). */
function validateStructure(file: string, sessionId: string, events: readonly SessionEvent[], firstEventLine: number) {
  try {
    new Session(sessionId, events);
  } catch (error) {
    const seq = error instanceof DhError && typeof error.details.seq === 'number' ? error.details.seq : null;
    if (seq !== null) throw invalidAt(file, seq, firstEventLine, problemOf(error));
    throw new DhError(IMPORT_INVALID, `${file}: ${problemOf(error)}`, { file });
  }
}

/** The core's problem text without the session prefix it adds (the file and line say where). */
function problemOf(error: unknown): string {
  if (error instanceof DhError && typeof error.details.problem === 'string') return error.details.problem;
  return messageOf(error);
}

/** The log under another session id: only `session/start` names the session. */
export function renamedLog(events: readonly SessionEvent[], sessionId: string): SessionEvent[] {
  return events.map((event) => (event.type === 'session/start' ? { ...event, sessionId } : event));
}

/**
 * Creates the session and appends the (already validated) events; refuses an existing id. The store chains
 * the rows from `chainAnchor` (default: the root anchor; a fork's is the parent's chain at the fork point).
 */
export async function createSessionFromLog(
  store: SessionStore,
  sessionId: string,
  events: readonly SessionEvent[],
  options: { readonly chainAnchor?: string } = {},
): Promise<void> {
  const start = events[0];
  const parent = start?.type === 'session/start' ? start.parent?.sessionId : undefined;
  const { created } = await store.create(sessionId, {
    createdAt: start?.at ?? 0,
    ...(parent !== undefined ? { parentSessionId: parent } : {}),
    ...(options.chainAnchor !== undefined ? { chainAnchor: options.chainAnchor } : {}),
  });
  if (!created) {
    throw new DhError(ErrorCode.SessionExists, `session "${sessionId}" already exists; choose another id with --as`, {
      sessionId,
    });
  }
  await store.append(sessionId, 0, events);
}

/**
 * What a fork's chain starts from: the parent's chain digest at its row `seedLength - 1`, or AFTER_UNCHAINED
 * when that row predates the chain. Undefined when the parent is not in the store.
 */
export async function forkAnchor(
  store: SessionStore,
  parentId: string,
  seedLength: number,
): Promise<string | undefined> {
  try {
    const { links } = await store.readChain(parentId, seedLength - 1, seedLength);
    const link = links[0];
    return link === undefined ? undefined : (link.chain ?? AFTER_UNCHAINED);
  } catch (error) {
    if (error instanceof DhError && error.code === ErrorCode.SessionNotFound) return undefined;
    throw error;
  }
}

export function attachmentDirExists(file: string): boolean {
  return existsSync(attachmentsDirFor(file));
}

// `dh export` / `dh import`: a session log as JSONL (one event per line, seq order), with the image
// attachments its events reference copied into `<file>.attachments/` (the attachment store's layout).
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { WorkerConfig } from '../../config/worker-config.js';
import { AttachmentRef, DhError, ErrorCode, parseEvent, Session, type SessionEvent } from '../../core/index.js';
import type { AttachmentStore } from '../../stores/attachment-store.js';
import type { SessionStore } from '../../stores/session-store.js';
import { messageOf } from './cli-io.js';

export const IMPORT_INVALID = 'IMPORT_INVALID';

/** Where this configuration's attachment bytes live: `$DH_HOME/attachments`. */
export function attachmentRoot(config: Pick<WorkerConfig, 'home'>): string {
  return join(config.home, 'attachments');
}

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

/**
 * Reads and validates a JSONL log: every line must be JSON and a valid event with seq = its position
 * (parseEvent), and the whole must be a structurally valid log (Session). Errors name the file, the
 * line and the seq.
 */
export async function readLogFile(file: string): Promise<{ sessionId: string; events: SessionEvent[] }> {
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
  validateStructure(file, sessionId, events);
  return { sessionId, events };
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

function validateStructure(file: string, sessionId: string, events: readonly SessionEvent[]): void {
  try {
    new Session(sessionId, events);
  } catch (error) {
    const seq = error instanceof DhError && typeof error.details.seq === 'number' ? error.details.seq : null;
    throw new DhError(
      IMPORT_INVALID,
      `${file}${seq !== null ? ` line ${seq + 1} (seq ${seq})` : ''}: ${problemOf(error)}`,
      { file, ...(seq !== null ? { line: seq + 1, seq } : {}) },
    );
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

/** Creates the session and appends the (already validated) events; refuses an existing id. */
export async function createSessionFromLog(
  store: SessionStore,
  sessionId: string,
  events: readonly SessionEvent[],
): Promise<void> {
  const start = events[0];
  const parent = start?.type === 'session/start' ? start.parent?.sessionId : undefined;
  const { created } = await store.create(sessionId, {
    createdAt: start?.at ?? 0,
    ...(parent !== undefined ? { parentSessionId: parent } : {}),
  });
  if (!created) {
    throw new DhError(ErrorCode.SessionExists, `session "${sessionId}" already exists; choose another id with --as`, {
      sessionId,
    });
  }
  await store.append(sessionId, 0, events);
}

export function attachmentDirExists(file: string): boolean {
  return existsSync(attachmentsDirFor(file));
}

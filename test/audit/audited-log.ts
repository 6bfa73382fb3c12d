// Logs for audit tests: a LogDriver log rebuilt through the core with a `request/sent` (the digest of the
// wire body the log derives) before each model answer, as the worker records it; and a tamper helper.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { buildSessionRequest, eventDigest, Session, type SessionEvent } from '../../src/core/index.js';
import { BUILTIN_PROFILES, type ProviderProfile } from '../../src/providers/provider-profiles.js';
import { toWireBody } from '../../src/providers/wire-body.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { LogDriver, type LogCommand } from '../helpers/log-generator.js';

/**
 * The events of `events` re-appended to a fresh Session, with a `request/sent` carrying the digest of the
 * wire body the log derives before every model answer (replacing the generator's placeholder ones).
 */
export async function withRequestSent(
  sessionId: string,
  events: readonly SessionEvent[],
  profile: ProviderProfile = BUILTIN_PROFILES.deepseek,
): Promise<SessionEvent[]> {
  const session = new Session(sessionId);
  for (const event of events) {
    if (event.type === 'request/sent') continue;
    if (event.type === 'assistant/message') {
      const wire = await toWireBody(buildSessionRequest(session), profile);
      session.append({
        type: 'request/sent',
        at: event.at,
        turn: event.turn,
        step: event.step,
        digest: wire.digest,
        bytes: wire.bytes,
      });
    }
    const { seq: _seq, key: _key, ...draft } = event;
    session.append(draft);
  }
  return [...session.events];
}

/** A turn with a tool call, a steer-free second turn, and an injected note: three turns, four steps. */
export const STANDARD_COMMANDS: readonly LogCommand[] = [
  { kind: 'send', origin: 'followup', text: 'Read the files and tell me what they say.' },
  { kind: 'step', toolCalls: 1, text: 'Let me read f0.txt.', changeHeader: false, skipLastTool: false },
  { kind: 'step', toolCalls: 0, text: 'f0.txt says hello.', changeHeader: false, skipLastTool: false },
  { kind: 'end-turn' },
  { kind: 'send', origin: 'inject', text: 'The branch moved to main.' },
  { kind: 'send', origin: 'followup', text: 'Now summarize.' },
  { kind: 'step', toolCalls: 0, text: 'Summary: the file says hello.', changeHeader: false, skipLastTool: false },
  { kind: 'end-turn' },
  { kind: 'send', origin: 'followup', text: 'Thanks!' },
  { kind: 'step', toolCalls: 0, text: 'You are welcome.', changeHeader: false, skipLastTool: false },
  { kind: 'end-turn' },
];

/** A valid log with recorded request digests, written through the core. */
export async function standardLog(sessionId: string, commands = STANDARD_COMMANDS): Promise<SessionEvent[]> {
  return withRequestSent(sessionId, new LogDriver(sessionId).run(commands).session.events);
}

export interface TempStore {
  readonly dir: string;
  readonly path: string;
  readonly store: SqliteSessionStore;
  cleanup(): Promise<void>;
}

export function tempStore(prefix = 'dh-audit-'): TempStore {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const path = join(dir, 'sessions.db');
  const store = SqliteSessionStore.open(path);
  return {
    dir,
    path,
    store,
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function writeLog(store: SqliteSessionStore, sessionId: string, events: readonly SessionEvent[]) {
  await store.create(sessionId, { createdAt: 1 });
  await store.append(sessionId, 0, events);
}

/**
 * Rewrites the first tool result's output behind the store's back. With `fixDigest` the digest column
 * is rewritten too, so the row still loads (as in test/activities/outbound-gate.test.ts).
 * Returns the tampered seq.
 */
export function tamperToolResult(dbPath: string, sessionId: string, fixDigest: boolean): number {
  const raw = new Database(dbPath);
  try {
    const row = raw
      .prepare("SELECT seq, body FROM events WHERE session_id = ? AND type = 'tool/result' ORDER BY seq LIMIT 1")
      .get(sessionId) as { seq: number; body: string };
    const edited = { ...(JSON.parse(row.body) as Record<string, unknown>), output: 'tampered output' } as SessionEvent;
    raw
      .prepare('UPDATE events SET body = ? WHERE session_id = ? AND seq = ?')
      .run(JSON.stringify(edited), sessionId, row.seq);
    if (fixDigest) {
      raw
        .prepare('UPDATE events SET digest = ? WHERE session_id = ? AND seq = ?')
        .run(eventDigest(edited), sessionId, row.seq);
    }
    return row.seq;
  } finally {
    raw.close();
  }
}

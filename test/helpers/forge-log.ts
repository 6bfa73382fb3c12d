// Hand-forged logs, as someone with write access to the store or to an export file would make them: each
// kind of forgery of the standard audit log, applied to SQLite rows or to `dh export` lines, with the chain
// either left as it was or recomputed over the forged events (a forger has no DH_LOG_KEY: MACs stay as they were).
import Database from 'better-sqlite3';
import { toEvent, type SessionEvent } from '../../src/core/index.js';
import { eventToRow } from '../../src/stores/event-row.js';
import { chainLink, ROOT_ANCHOR } from '../../src/stores/log-chain.js';
import { nativeEventDigest } from '../../src/stores/native-sha256.js';

export interface Forgery {
  readonly name: string;
  /** The first seq the forgery changes (where a verifier must say the log breaks). */
  readonly seq: number;
  readonly forge: (events: readonly SessionEvent[]) => SessionEvent[];
}

/** Forgeries of `standardLog` (test/audit/audited-log.ts), each leaving a structurally valid log. */
export const FORGERIES: readonly Forgery[] = [
  {
    name: 'an edited body',
    seq: 14,
    forge: (events) => events.map((e) => (e.seq === 14 ? ({ ...e, content: 'forged answer' } as SessionEvent) : e)),
  },
  {
    // One of the two user messages of step 2.1 goes, and every later row moves up one seq.
    name: 'a deleted row, renumbered',
    seq: 22,
    forge: (events) => renumbered(events.filter((e) => e.seq !== 22)),
  },
  {
    name: 'an inserted row',
    seq: 28,
    forge: (events) =>
      renumbered([
        ...events.slice(0, 28),
        toEvent(
          {
            type: 'inbox/enqueue',
            at: events[27]!.at,
            messageId: 'forged',
            target: 'next-turn',
            wakeup: false,
            origin: 'inject',
            content: 'a note nobody sent',
          },
          28,
        ),
        ...events.slice(28),
      ]),
  },
  {
    name: 'swapped rows',
    seq: 17,
    forge: (events) => renumbered([...events.slice(0, 17), events[18]!, events[17]!, ...events.slice(19)]),
  },
  {
    name: 'an edited timestamp',
    seq: 10,
    forge: (events) => events.map((e) => (e.seq === 10 ? { ...e, at: e.at + 60_000 } : e)),
  },
];

export function renumbered(events: readonly SessionEvent[]): SessionEvent[] {
  return events.map((event, seq) => ({ ...event, seq }));
}

/** The chain digests a store would compute for `events` from `anchor`. */
export function rechained(events: readonly SessionEvent[], anchor = ROOT_ANCHOR): string[] {
  let prev = anchor;
  return events.map((event) => (prev = chainLink(prev, nativeEventDigest(event), event.at)));
}

/**
 * Replaces a session's rows in a SQLite store, behind its back, with `forged` (digests recomputed, so every
 * row still loads). The chain column is recomputed over the forged events when `recomputeChain`, else each
 * position keeps the chain it had; each position keeps its MAC either way.
 */
export function forgeStoredRows(
  dbPath: string,
  sessionId: string,
  forged: readonly SessionEvent[],
  recomputeChain: boolean,
): void {
  const db = new Database(dbPath);
  try {
    const old = db.prepare('SELECT chain, mac FROM events WHERE session_id = ? ORDER BY seq').all(sessionId) as Array<{
      chain: string | null;
      mac: string | null;
    }>;
    const { anchor } = db
      .prepare('SELECT chain_anchor AS anchor FROM sessions WHERE session_id = ?')
      .get(sessionId) as {
      anchor: string | null;
    };
    const chains = recomputeChain ? rechained(forged, anchor ?? ROOT_ANCHOR) : old.map((row) => row.chain);
    const insert = db.prepare(
      `INSERT INTO events (session_id, seq, type, key, message_id, digest, at, body, chain, mac)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    db.transaction(() => {
      db.prepare('DELETE FROM events WHERE session_id = ?').run(sessionId);
      forged.forEach((event, i) => {
        const row = eventToRow(event);
        insert.run(
          sessionId,
          row.seq,
          row.type,
          row.key,
          row.messageId,
          row.digest,
          row.at,
          row.body,
          chains[i] ?? null,
          old[i]?.mac ?? null,
        );
      });
    })();
  } finally {
    db.close();
  }
}

/**
 * An export file (version 2) with its events forged: each line keeps the chain digest (unless `recomputeChain`)
 * and MAC of its position; the header's head and chain head are made to match, as a careful forger would.
 */
export function forgeExportFile(
  text: string,
  forge: (events: readonly SessionEvent[]) => SessionEvent[],
  recomputeChain: boolean,
): string {
  const [headerLine, ...lines] = text.trimEnd().split('\n');
  const header = JSON.parse(headerLine ?? '') as { chainAnchor: string | null; head: number; chainHead: string | null };
  const rows = lines.map(
    (line) => JSON.parse(line) as { event: SessionEvent; chain: string | null; mac: string | null },
  );
  const forged = forge(rows.map((row) => row.event));
  const chains = recomputeChain ? rechained(forged, header.chainAnchor ?? ROOT_ANCHOR) : rows.map((row) => row.chain);
  const out = forged.map((event, i) => ({ event, chain: chains[i] ?? null, mac: rows[i]?.mac ?? null }));
  const newHeader = { ...header, head: forged.length, chainHead: out.at(-1)?.chain ?? null };
  return [newHeader, ...out].map((line) => `${JSON.stringify(line)}\n`).join('');
}

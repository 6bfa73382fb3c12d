// The `dh export` file, version 2: a header line (session, chain anchor, head, chain head), then one line
// per event carrying the store's chain digest and MAC, so `dh import` can verify the log as it was exported.
// Version 1 (no header, one bare event per line) is still read, as an unchained log.
import { z } from 'zod';
import type { SessionEvent } from '../core/index.js';
import type { ChainLink, StoredChain } from '../stores/log-chain.js';

export const EXPORT_FORMAT = 'dh-session-export';
export const EXPORT_VERSION = 2;

const Digest = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'a sha256:<hex> digest');

export const ExportHeader = z.strictObject({
  format: z.literal(EXPORT_FORMAT),
  version: z.literal(EXPORT_VERSION),
  sessionId: z.string(),
  /** The `prev` of seq 0's link; null for a session created before the chain. */
  chainAnchor: Digest.nullable(),
  /** Events in the file. */
  head: z.number().int().nonnegative(),
  /** The last event's chain digest (null when it has none). */
  chainHead: Digest.nullable(),
});
export type ExportHeader = z.infer<typeof ExportHeader>;

/** One event line; `event` is validated afterwards by the core (parseEvent at its seq). */
export const ExportLine = z.strictObject({
  event: z.unknown(),
  chain: Digest.nullable(),
  mac: z.string().nullable(),
});
export type ExportLine = z.infer<typeof ExportLine>;

/** Whether a file's first line is a version-2 header (or claims to be a header of another version). */
export function isExportHeader(first: unknown): first is { format: string } {
  return first !== null && typeof first === 'object' && 'format' in first && first.format === EXPORT_FORMAT;
}

/**
 * The export file of a session: `chain` must hold one link per event, in the same seq order (the store's
 * `readChain(sessionId, 0, events.length)`).
 */
export function toExportJsonl(sessionId: string, events: readonly SessionEvent[], chain: StoredChain): string {
  const links: ReadonlyArray<ChainLink | undefined> = chain.links;
  const lines = events.map((event, i) => {
    const link = links[i];
    if (link?.seq !== event.seq) throw new Error(`the store's chain has no row for seq ${event.seq}`);
    return JSON.stringify({ event, chain: link.chain, mac: link.mac } satisfies ExportLine);
  });
  const header: ExportHeader = {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    sessionId,
    chainAnchor: chain.anchor,
    head: events.length,
    chainHead: links[events.length - 1]?.chain ?? null,
  };
  return [JSON.stringify(header), ...lines].map((line) => `${line}\n`).join('');
}

// Model-visible <=> logged, as a structural rule: a log where a model answer has no recorded request
// (its `request/sent` dropped and the rest renumbered) is refused by import and fails the audit, by seq.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { auditSession } from '../../src/audit/audit-session.js';
import { toEvent, type SessionEvent } from '../../src/core/index.js';
import { IMPORT_INVALID, readLogFile, toJsonl } from '../../src/operations/session-transfer.js';
import { standardLog, tempStore, writeLog, type TempStore } from './audited-log.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** The log with its `index`-th `request/sent` removed and every later event renumbered (keys hold no seq). */
function dropRequest(events: readonly SessionEvent[], index: number): { forged: SessionEvent[]; answerSeq: number } {
  const sentSeqs = events.filter((e) => e.type === 'request/sent').map((e) => e.seq);
  const dropped = sentSeqs[index];
  if (dropped === undefined) throw new Error(`the log has no request/sent #${index}`);
  const forged = events
    .filter((e) => e.seq !== dropped)
    .map((e, seq) => {
      const { seq: _seq, key: _key, ...draft } = e;
      return toEvent(draft, seq);
    });
  // The answer that followed the dropped request now sits where the request was.
  return { forged, answerSeq: dropped };
}

describe('an answer without its recorded request', () => {
  it('fails the audit of a store holding it, naming the seq of the answer', async () => {
    const temp: TempStore = tempStore();
    cleanups.push(() => temp.cleanup());
    const { forged, answerSeq } = dropRequest(await standardLog('forged'), 1);
    // A hand-forged store: the store validates each row, not the log's structure.
    await writeLog(temp.store, 'forged', forged);
    const report = await auditSession({ store: temp.store, sessionId: 'forged' });
    expect(report.ok).toBe(false);
    expect(report.failures).toContainEqual(
      `structure: session "forged" seq ${answerSeq}: assistant/message: step 1.2 has no recorded request (request/sent)`,
    );
  });

  it('is refused by import, naming the line and seq', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dh-no-request-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const { forged, answerSeq } = dropRequest(await standardLog('exported'), 0);
    const file = join(dir, 'exported.jsonl');
    writeFileSync(file, toJsonl(forged));
    await expect(readLogFile(file)).rejects.toMatchObject({
      code: IMPORT_INVALID,
      message: `${file} line ${answerSeq + 1} (seq ${answerSeq}): assistant/message: step 1.1 has no recorded request (request/sent)`,
    });
  });
});

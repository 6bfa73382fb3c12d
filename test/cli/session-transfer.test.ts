// readLogFile on export files whose header disagrees with their lines (in-process, no CLI): a cut tail,
// a wrong chain head, an unknown version, a root session with a foreign anchor. Each is IMPORT_INVALID.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { toExportJsonl } from '../../src/operations/session-export-format.js';
import { IMPORT_INVALID, readLogFile } from '../../src/operations/session-transfer.js';
import { DhError } from '../../src/core/index.js';
import { ROOT_ANCHOR } from '../../src/stores/log-chain.js';
import { standardLog } from '../audit/audited-log.js';
import { rechained } from '../helpers/forge-log.js';

describe('readLogFile: the export header must agree with the file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-transfer-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function exported(anchor = ROOT_ANCHOR): Promise<string[]> {
    const events = await standardLog('s1');
    const chains = rechained(events, anchor);
    const links = events.map((e, i) => ({ seq: e.seq, at: e.at, digest: '', chain: chains[i] ?? null, mac: null }));
    return toExportJsonl('s1', events, { anchor, links }).trimEnd().split('\n');
  }

  async function refusal(name: string, lines: readonly string[]): Promise<DhError> {
    const file = join(dir, name);
    writeFileSync(file, `${lines.join('\n')}\n`);
    const error = await readLogFile(file).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DhError);
    expect((error as DhError).code).toBe(IMPORT_INVALID);
    return error as DhError;
  }

  it('reads a whole file, and verifies its chain', async () => {
    const file = join(dir, 'whole.jsonl');
    writeFileSync(file, `${(await exported()).join('\n')}\n`);
    const log = await readLogFile(file);
    expect(log).toMatchObject({
      sessionId: 's1',
      version: 2,
      chainAnchor: ROOT_ANCHOR,
      chain: { ok: true, links: 37 },
    });
  });

  it('refuses a file whose last lines were cut', async () => {
    const error = await refusal('cut.jsonl', (await exported()).slice(0, -2));
    expect(error.message).toContain('line 1: the header says 37 event(s), the file holds 35: lines were cut or added');
  });

  it('refuses a header whose chain head is not the last line’s', async () => {
    const [header, ...lines] = await exported();
    const edited = { ...(JSON.parse(header ?? '') as object), chainHead: `sha256:${'0'.repeat(64)}` };
    const error = await refusal('head.jsonl', [JSON.stringify(edited), ...lines]);
    expect(error.message).toContain(`line 1: the header's chain head sha256:${'0'.repeat(64)} is not the last event's`);
  });

  it('refuses another export version, naming it', async () => {
    const [header, ...lines] = await exported();
    const error = await refusal('v3.jsonl', [
      JSON.stringify({ ...(JSON.parse(header ?? '') as object), version: 3 }),
      ...lines,
    ]);
    expect(error.message).toContain('line 1: not a version 2 export header: version:');
  });

  it('refuses a session that is not a fork chained from another anchor', async () => {
    const error = await refusal('anchor.jsonl', await exported(`sha256:${'ab'.repeat(32)}`));
    expect(error.message).toContain('line 2 (seq 0): chain: the anchor sha256:abab');
    expect(error.message).toContain('of a session that is not a fork is not the root anchor');
  });
});

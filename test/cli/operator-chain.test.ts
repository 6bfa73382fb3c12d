// Tamper evidence through the `dh` CLI, offline, on SQLite: hand-forged store rows fail `dh audit --no-mirror`
// and hand-forged export files are refused by `dh import`, each naming the seq; with DH_LOG_KEY even when the
// forger recomputed every digest and the whole chain. Also: round trips keep the chain, old logs and old
// export files are reported as unchained, and a bad key is refused without being printed.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Session, type SessionEvent } from '../../src/core/index.js';
import { parseLogKey } from '../../src/stores/log-key.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { standardLog } from '../audit/audited-log.js';
import { FORGERIES, forgeExportFile, forgeStoredRows } from '../helpers/forge-log.js';
import { LEGACY_SQLITE_SCHEMA, legacyRowValues } from '../stores/legacy-schema.js';
import { cleanEnv, describeRun, runDh, tempHome, type DhResult } from './operator-cli.js';

const KEY_VALUE = Buffer.alloc(32, 0x5a).toString('base64');
const KEY = parseLogKey(KEY_VALUE);
const NO_KEY_NOTE =
  'not detected: without DH_LOG_KEY, a forger who rewrites rows and recomputes every digest and the whole chain is not detected';

interface ExportLine {
  readonly event: SessionEvent;
  readonly chain: string | null;
  readonly mac: string | null;
}

function exportLines(text: string): { header: Record<string, unknown>; lines: ExportLine[] } {
  const [header, ...lines] = text.trimEnd().split('\n');
  return {
    header: JSON.parse(header ?? '') as Record<string, unknown>,
    lines: lines.map((line) => JSON.parse(line) as ExportLine),
  };
}

/** Runs `dh` once per argument list, at most two at a time (each is a child process loading the CLI). */
async function runAll(runs: ReadonlyArray<readonly string[]>, env: NodeJS.ProcessEnv): Promise<DhResult[]> {
  const results: DhResult[] = [];
  for (let i = 0; i < runs.length; i += 2)
    results.push(...(await Promise.all(runs.slice(i, i + 2).map((args) => runDh(args, env)))));
  return results;
}

describe('tamper evidence through dh audit and dh import', { timeout: 240_000 }, () => {
  const keyed = tempHome('dh-cli-chain-keyed-');
  const plain = tempHome('dh-cli-chain-plain-');
  const legacy = tempHome('dh-cli-chain-legacy-');
  const keyedEnv = cleanEnv({ DH_HOME: keyed.home, DH_LOG_KEY: KEY_VALUE });
  const plainEnv = cleanEnv({ DH_HOME: plain.home });
  let events: SessionEvent[];

  beforeAll(async () => {
    for (const [home, withKey] of [
      [keyed.home, true],
      [plain.home, false],
    ] as const) {
      const path = join(home, 'sessions.db');
      const store = SqliteSessionStore.open(path, withKey ? { logKey: KEY } : {});
      try {
        for (const id of ['clean', ...FORGERIES.flatMap((_, i) => [`full-${i}`, `kept-${i}`])]) {
          await store.create(id, { createdAt: 1 });
          await store.append(id, 0, await standardLog(id));
        }
      } finally {
        await store.close();
      }
      for (const [i, forgery] of FORGERIES.entries()) {
        forgeStoredRows(path, `full-${i}`, forgery.forge(await standardLog(`full-${i}`)), true);
        forgeStoredRows(path, `kept-${i}`, forgery.forge(await standardLog(`kept-${i}`)), false);
      }
    }
    events = await standardLog('clean');
  });
  afterAll(() => {
    keyed.cleanup();
    plain.cleanup();
    legacy.cleanup();
  });

  it('with DH_LOG_KEY, audit fails every forged store at its seq, even with the whole chain recomputed', async () => {
    const [clean, ...forged] = await runAll(
      [
        ['audit', 'clean', '--no-mirror'],
        ...FORGERIES.flatMap((_, i) => [
          ['audit', `full-${i}`, '--no-mirror'],
          ['audit', `kept-${i}`, '--no-mirror'],
        ]),
      ],
      keyedEnv,
    );
    expect(clean?.code, describeRun(clean!)).toBe(0);
    expect(clean?.stdout).toContain(
      `chain: 37 link(s) recompute, root anchor, every MAC verifies under key id ${KEY.keyId}`,
    );
    expect(clean?.stdout).not.toContain(NO_KEY_NOTE);
    for (const [i, forgery] of FORGERIES.entries()) {
      const [full, kept] = [forged[2 * i]!, forged[2 * i + 1]!];
      expect(full.code, `${forgery.name}\n${describeRun(full)}`).toBe(1);
      expect(full.stdout).toContain(
        `  - chain: seq ${forgery.seq}: the row's MAC does not verify under key id ${KEY.keyId}`,
      );
      expect(kept.code, `${forgery.name}\n${describeRun(kept)}`).toBe(1);
      expect(kept.stdout).toMatch(
        new RegExp(`^  - chain: seq ${forgery.seq}: the stored chain digest .* does not follow`, 'm'),
      );
    }
  });

  it('without a key, audit fails every forgery that kept the chain, and says a full recompute goes undetected', async () => {
    const results = await runAll(
      FORGERIES.flatMap((_, i) => [
        ['audit', `kept-${i}`, '--no-mirror'],
        ['audit', `full-${i}`, '--no-mirror'],
      ]),
      plainEnv,
    );
    for (const [i, forgery] of FORGERIES.entries()) {
      const [kept, full] = [results[2 * i]!, results[2 * i + 1]!];
      expect(kept.code, `${forgery.name}\n${describeRun(kept)}`).toBe(1);
      expect(kept.stdout).toContain(`chain: BROKEN at seq ${forgery.seq}: the stored chain digest`);
      expect(kept.stdout).toContain(NO_KEY_NOTE);
      // The recomputed chain verifies: the report says this is what it cannot see.
      expect(full.stdout, `${forgery.name}\n${describeRun(full)}`).toMatch(
        /^chain: \d+ link\(s\) recompute, root anchor, MACs not checked/m,
      );
      expect(full.stdout).toContain(NO_KEY_NOTE);
    }
  });

  it('with DH_LOG_KEY, import refuses every forged export file at its line and seq, and writes nothing', async () => {
    const exported = await runDh(['export', 'clean'], keyedEnv);
    expect(exported.code, describeRun(exported)).toBe(0);
    const files = FORGERIES.flatMap((forgery, i) =>
      [true, false].map((recompute) => {
        const file = join(keyed.home, `forged-${i}-${recompute ? 'full' : 'kept'}.jsonl`);
        writeFileSync(file, forgeExportFile(exported.stdout, forgery.forge, recompute));
        return { file, forgery, recompute };
      }),
    );
    const results = await runAll(
      files.map(({ file }, i) => ['import', file, '--as', `imported-${i}`]),
      keyedEnv,
    );
    for (const [i, { file, forgery, recompute }] of files.entries()) {
      const result = results[i]!;
      expect(result.code, `${forgery.name} (recomputed: ${recompute})\n${describeRun(result)}`).toBe(1);
      expect(result.stderr).toContain(
        `${file} line ${forgery.seq + 2} (seq ${forgery.seq}): chain: ` +
          (recompute ? `the row's MAC does not verify under key id ${KEY.keyId}` : 'the stored chain digest'),
      );
    }
    const listed = await runDh(['ls', '--json'], keyedEnv);
    expect(listed.stdout).not.toContain('imported-');
  });

  it('without a key, import refuses every forged file that kept the chain', async () => {
    const exported = await runDh(['export', 'clean'], plainEnv);
    expect(exported.code, describeRun(exported)).toBe(0);
    const files = FORGERIES.map((forgery, i) => {
      const file = join(plain.home, `forged-${i}.jsonl`);
      writeFileSync(file, forgeExportFile(exported.stdout, forgery.forge, false));
      return file;
    });
    const results = await runAll(
      files.map((file, i) => ['import', file, '--as', `imported-${i}`]),
      plainEnv,
    );
    for (const [i, forgery] of FORGERIES.entries()) {
      expect(results[i]?.code, describeRun(results[i]!)).toBe(1);
      expect(results[i]?.stderr).toContain(
        `${files[i]} line ${forgery.seq + 2} (seq ${forgery.seq}): chain: the stored chain digest`,
      );
    }
  });

  it('export → import keeps every chain digest and MAC; MACs are there exactly when the key is', async () => {
    const out = join(keyed.home, 'clean.jsonl');
    const exported = await runDh(['export', 'clean', '--out', out], keyedEnv);
    expect(exported.code, describeRun(exported)).toBe(0);
    const file = exportLines(readFileSync(out, 'utf8'));
    expect(file.header).toMatchObject({ format: 'dh-session-export', version: 2, sessionId: 'clean', head: 37 });
    expect(file.header.chainHead).toBe(file.lines.at(-1)?.chain);
    expect(file.lines.map((l) => l.event)).toEqual(events);
    expect(file.lines.every((l) => l.mac === KEY.mac(l.chain ?? ''))).toBe(true);

    const other = tempHome('dh-cli-chain-import-');
    try {
      const otherEnv = cleanEnv({ DH_HOME: other.home, DH_LOG_KEY: KEY_VALUE });
      const imported = await runDh(['import', out], otherEnv);
      expect(imported.code, describeRun(imported)).toBe(0);
      expect(imported.stderr).toContain('its chain verified (37 event(s); every MAC verified)');
      const [again, renamed] = await runAll(
        [
          ['export', 'clean'],
          ['import', out, '--as', 'renamed'],
        ],
        otherEnv,
      );
      expect(again?.stdout).toBe(readFileSync(out, 'utf8'));
      expect(renamed?.code, describeRun(renamed!)).toBe(0);
      const [audit, renamedExport] = await runAll(
        [
          ['audit', 'renamed', '--no-mirror'],
          ['export', 'renamed'],
        ],
        otherEnv,
      );
      expect(audit?.code, describeRun(audit!)).toBe(0);
      // Renamed: seq 0 changed, so the importing store chained every row anew (and MACed it).
      const copy = exportLines(renamedExport?.stdout ?? '');
      expect(copy.lines.every((l, i) => l.chain !== file.lines[i]?.chain && l.mac === KEY.mac(l.chain ?? ''))).toBe(
        true,
      );
    } finally {
      other.cleanup();
    }

    const plainExport = await runDh(['export', 'clean'], plainEnv);
    const plainFile = join(plain.home, 'clean.jsonl');
    writeFileSync(plainFile, plainExport.stdout);
    expect(exportLines(plainExport.stdout).lines.every((l) => l.chain !== null && l.mac === null)).toBe(true);
    // A file nobody MACed is not vouched for under the key: import refuses it rather than MAC it now.
    const refused = await runDh(['import', plainFile, '--as', 'unvouched'], keyedEnv);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `${plainFile} line 2 (seq 0): chain: the row has no MAC (it was written without DH_LOG_KEY); audit without DH_LOG_KEY for a chain-only check`,
    );
  });

  it('reports a database written before the chain as unchained, chains what follows, and fails it under a key', async () => {
    const path = join(legacy.home, 'sessions.db');
    const db = new Database(path);
    try {
      db.exec(LEGACY_SQLITE_SCHEMA);
      db.prepare('INSERT INTO sessions (session_id, created_at) VALUES (?, ?)').run('old', 1);
      const insert = db.prepare(
        'INSERT INTO events (session_id, seq, type, key, message_id, digest, at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      );
      for (const event of await standardLog('old')) insert.run(...legacyRowValues('old', event));
    } finally {
      db.close();
    }
    const store = SqliteSessionStore.open(path); // migrates
    try {
      const session = new Session('old', await store.read('old'));
      session.append({
        type: 'inbox/enqueue',
        at: 2_000_000_000_000,
        messageId: 'late',
        target: 'next-turn',
        wakeup: false,
        origin: 'inject',
        content: 'written after the upgrade',
      });
      await store.append('old', 37, session.events.slice(37));
    } finally {
      await store.close();
    }
    const legacyEnv = cleanEnv({ DH_HOME: legacy.home });
    const [audit, exported] = await runAll(
      [
        ['audit', 'old', '--no-mirror'],
        ['export', 'old'],
      ],
      legacyEnv,
    );
    expect(audit?.code, describeRun(audit!)).toBe(0);
    expect(audit?.stdout).toContain(
      'chain: 1 link(s) recompute, MACs not checked (no DH_LOG_KEY); unchained 0..36 (written before the chain existed, not covered)',
    );
    const file = exportLines(exported?.stdout ?? '');
    expect(file.header).toMatchObject({ chainAnchor: null, head: 38 });
    expect(file.lines.map((l) => l.chain === null)).toEqual([...Array<boolean>(37).fill(true), false]);
    const keyedAudit = await runDh(['audit', 'old', '--no-mirror'], { ...legacyEnv, DH_LOG_KEY: KEY_VALUE });
    expect(keyedAudit.code).toBe(1);
    expect(keyedAudit.stdout).toContain(
      '  - chain: seq 0: the row has no chain digest and no MAC (written before the chain existed); audit without DH_LOG_KEY for a chain-only check',
    );

    // Its export imports elsewhere (without a key), reported as unchained where it was.
    const file2 = join(legacy.home, 'old.jsonl');
    writeFileSync(file2, exported?.stdout ?? '');
    // And an export of the old format (bare events) still imports, as an unchained log.
    const bare = join(legacy.home, 'old-bare.jsonl');
    writeFileSync(bare, file.lines.map((l) => `${JSON.stringify(l.event)}\n`).join(''));
    const [fromV2, fromBare, bareUnderKey] = await runAll(
      [
        ['import', file2, '--as', 'old-copy'],
        ['import', bare, '--as', 'old-bare'],
      ],
      plainEnv,
    ).then(async (results) => [...results, await runDh(['import', bare, '--as', 'old-keyed'], keyedEnv)]);
    expect(fromV2?.code, describeRun(fromV2!)).toBe(0);
    expect(fromV2?.stderr).toContain(
      'its chain verified (38 event(s), seqs 0..36 unchained; MACs not checked (no DH_LOG_KEY))',
    );
    expect(fromBare?.code, describeRun(fromBare!)).toBe(0);
    expect(fromBare?.stderr).toContain('the file is in export format 1, with no chain to verify (unchained)');
    expect(bareUnderKey?.code).toBe(1);
    expect(bareUnderKey?.stderr).toContain(
      `${bare}: an export of format 1 (one bare event per line) has no chain and no MACs`,
    );
  });

  it('refuses a DH_LOG_KEY that is not 32 bytes of base64, naming the variable and never the value', async () => {
    const value = 'c2VjcmV0LWJ1dC10b28tc2hvcnQ=';
    const result = await runDh(['log', 'clean'], { ...plainEnv, DH_LOG_KEY: value });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'invalid configuration: DH_LOG_KEY decodes to 20 bytes; it must be 32 bytes in base64',
    );
    expect(result.stderr + result.stdout).not.toContain(value);
  });
});

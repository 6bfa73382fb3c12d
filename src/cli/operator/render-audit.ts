// The human form of an AuditReport (`dh audit`, `dh demo`): one row per sent request, then the
// summary lines and the verdict with every failure.
import type { ChainCheck } from '../../audit/audit-chain.js';
import type { AuditReport, AuditStepRow, MirrorCheck } from '../../audit/audit-session.js';

export function renderAuditReport(report: AuditReport): string {
  const s = report.summary;
  const lines: string[] = [];
  lines.push(
    `audit of session ${report.sessionId}: ${s.events} events, ${s.turns} turn(s), ${s.steps} step(s), ` +
      `${report.rows.length} request(s) sent`,
  );
  lines.push(`log: ${s.log.ok ? 'loads and validates' : `INVALID: ${s.log.problem ?? ''}`}`);
  if (s.log.ok) lines.push(`structure: ${s.structure.ok ? 'valid' : `INVALID: ${s.structure.problem ?? ''}`}`);
  if (s.chain !== null) lines.push(...chainLines(s.chain));
  if (report.rows.length > 0) {
    lines.push('');
    lines.push(table(report.rows));
    lines.push('');
  }
  lines.push(
    `digests: ${s.digests.ok}/${report.rows.length} re-derive` +
      (s.digests.mismatched.length > 0 ? `; MISMATCH at ${s.digests.mismatched.join(', ')}` : '') +
      (s.digests.underivable.length > 0 ? `; NOT DERIVABLE at ${s.digests.underivable.join(', ')}` : ''),
  );
  const p = s.prefix;
  lines.push(
    `prefix stability: ${p.ratio === null ? 'n/a (no consecutive requests in one epoch)' : `${p.extended}/${p.pairs} = ${percent(p.ratio)}`}` +
      (p.broken.length > 0 ? `; broken at ${p.broken.join(', ')}` : ''),
  );
  lines.push(
    `cache reads: expected ${s.cache.expected}, reported ${s.cache.reported} over ${s.cache.compared} step(s)` +
      (s.cache.differing.length > 0 ? `; differ at ${s.cache.differing.join(', ')} (informational)` : ''),
  );
  lines.push(
    `cost: $${s.cost.usd.toFixed(6)} over ${s.cost.priced} priced answer(s)` +
      (s.cost.unpriced > 0 ? `, ${s.cost.unpriced} without a price` : '') +
      (s.cost.mismatched.length > 0
        ? `; NOT its usage at its price at ${s.cost.mismatched.join(', ')}`
        : '; re-derived'),
  );
  lines.push(
    s.agent === null
      ? 'agent: none named (a format-1 log: the worker configuration)'
      : `agent: ${s.agent.name} (version${s.agent.versions.length > 1 ? 's' : ''} ${s.agent.versions.join(', ') || 'none'}` +
          `, ${s.agent.overrides} overrides set)` +
          (s.agent.problems.length > 0 ? `; ${s.agent.problems.length} problem(s)` : '; every header names it'),
  );
  lines.push(`history mirror: ${mirrorText(s.mirror)}`);
  lines.push(...subagentLines(report));
  lines.push('');
  if (report.ok) lines.push('AUDIT PASSED');
  else {
    lines.push(`AUDIT FAILED (${report.failures.length} problem(s)):`);
    for (const failure of report.failures) lines.push(`  - ${failure}`);
  }
  return `${lines.join('\n')}\n`;
}

/** One line per delegation call that names a child: the link, how the child ended, its own audit's verdict. */
function subagentLines(report: AuditReport): string[] {
  const checks = report.summary.subagents;
  const up = report.summary.parentLink;
  const parentLine =
    up === null
      ? []
      : [
          `parent link: ${up.parentSessionId}, call ${up.callId}: ` +
            (up.status === 'ok'
              ? 'its log names this session from that call'
              : up.status === 'no-parent-log'
                ? 'not checked (the parent is not in this store)'
                : 'BROKEN'),
        ];
  if (checks.length === 0) return parentLine;
  const audits = new Map(report.children.map((c) => [c.sessionId, c]));
  const broken = checks.filter((c) => c.problems.length > 0).length;
  const lines = [
    ...parentLine,
    `subagents: ${checks.length} linked, ${report.children.length} audited` +
      (broken > 0 ? `; ${broken} link(s) BROKEN` : '; every link holds both ways'),
  ];
  for (const c of checks) {
    const audit = audits.get(c.childSessionId);
    const ended = c.recorded !== null ? `${c.recorded.reason}, ${c.recorded.tokens} tokens` : 'no outcome recorded';
    const verdict =
      audit === undefined
        ? c.childLog
          ? 'audited once, elsewhere in the tree'
          : 'no log'
        : audit.ok
          ? `its audit PASSED (${audit.rows.length} request(s))`
          : `its audit FAILED (${audit.failures.length} problem(s))`;
    lines.push(
      `  ${c.callId} at ${c.turn}.${c.step}${c.inSeed ? ` (seed, from ${c.owner})` : ''} → ${c.childSessionId}: ` +
        `${ended}; ${c.problems.length > 0 ? 'link BROKEN' : 'link ok'}; ${verdict}`,
    );
    for (const note of c.notes) lines.push(`    note: ${note}`);
  }
  return lines;
}

function chainLines(chain: ChainCheck): string[] {
  const unchained =
    chain.unchained === null
      ? ''
      : `; unchained ${chain.unchained.from}..${chain.unchained.to} (written before the chain existed, not covered)`;
  const macs =
    chain.keyId !== null ? `, every MAC verifies under key id ${chain.keyId}` : ', MACs not checked (no DH_LOG_KEY)';
  const anchor =
    chain.anchor === 'fork-parent-checked'
      ? ', fork anchor matches the parent'
      : chain.anchor === 'root'
        ? ', root anchor'
        : '';
  const head =
    chain.broken !== null
      ? `chain: BROKEN at seq ${chain.broken.seq}: ${chain.broken.problem}`
      : `chain: ${chain.links - (chain.unchained === null ? 0 : chain.unchained.to + 1)} link(s) recompute${anchor}${macs}${unchained}`;
  return [head, ...chain.limits.map((limit) => `  not detected: ${limit}`)];
}

function table(rows: readonly AuditStepRow[]): string {
  const header = ['request', 'seq', 'model', 'msgs', 'digest', 'prefix', 'cache read exp/rep'];
  const body = rows.map((r) => [
    r.id,
    String(r.sentSeq),
    r.model ?? '-',
    r.messages === null ? '-' : String(r.messages),
    r.error !== null ? 'UNDERIVABLE' : r.digestOk ? 'ok' : 'MISMATCH',
    r.prefixExtends === null ? '-' : r.prefixExtends ? 'extends' : `BROKEN (${r.prefixProblem ?? ''})`,
    `${count(r.expectedCacheRead)} / ${count(r.reportedCacheRead)}${
      r.expectedCacheRead !== null && r.reportedCacheRead !== null && r.expectedCacheRead !== r.reportedCacheRead
        ? ' ≠'
        : ''
    }`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] ?? '').length)));
  const format = (row: readonly string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [format(header), format(widths.map((w) => '-'.repeat(w))), ...body.map(format)].join('\n');
}

function mirrorText(mirror: MirrorCheck | null): string {
  if (mirror === null) return 'not checked (no Temporal server reachable, or --no-mirror)';
  switch (mirror.status) {
    case 'ok':
      return (
        `ok (${mirror.report.runs} run(s), ${mirror.report.receipts} receipt(s), ${mirror.report.chains} chain head(s)` +
        `${mirror.report.uncoveredPrefix > 0 ? `, seqs 0..${mirror.report.uncoveredPrefix - 1} predate the workflow` : ''})`
      );
    case 'mismatch':
      return `DISAGREES: ${mirror.report.problem ?? ''}`;
    case 'no-workflow':
      return `not checked: ${mirror.problem}`;
    case 'error':
      return `FAILED: ${mirror.problem}`;
  }
}

function count(value: number | null): string {
  return value === null ? '-' : String(value);
}

function percent(ratio: number): string {
  return `${(ratio * 100).toFixed(ratio === 1 ? 0 : 1)}%`;
}

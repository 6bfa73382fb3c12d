// The operator commands' actions over the log: log, show, audit, replay, fork, resume, export, import.
// Offline ones open the store only; fork and resume also need Temporal (and a worker to run the session).
import { writeFile } from 'node:fs/promises';
import { WorkflowNotFoundError } from '@temporalio/client';
import { auditSession } from '../../audit/audit-session.js';
import { deriveSentRequest, deriveSentRequests, sentEvents } from '../../audit/derive-sent-requests.js';
import type { WorkerConfig } from '../../config/worker-config.js';
import { DhError, Session } from '../../core/index.js';
import { workerProfile } from '../../config/worker-profile.js';
import type { ProviderProfile } from '../../providers/provider-profiles.js';
import { sessionWorkflowId } from '../../shared/session-messages.js';
import { AttachmentStore } from '../../stores/attachment-store.js';
import { AFTER_UNCHAINED } from '../../stores/log-chain.js';
import type { SessionStore } from '../../stores/session-store.js';
import { openCliContext, openStoreOnly } from '../cli-context.js';
import { warnWithoutWorker } from '../worker-warning.js';
import { ExitCode, messageOf, writeErr, writeOut, type StepRef } from './cli-io.js';
import { connectIfReachable } from './optional-temporal.js';
import { forkSession } from '../../operations/fork-session.js';
import { renderAuditReport } from './render-audit.js';
import { eventLine } from './render-event.js';
import { renderWireBody, requestHeading } from './render-request.js';
import { renderOverview, sessionOverview } from '../../operations/session-overview.js';
import {
  attachmentDirExists,
  attachmentRefs,
  attachmentRoot,
  attachmentsDirFor,
  copyAttachments,
  createSessionFromLog,
  forkAnchor,
  readLogFile,
  renamedLog,
  toJsonl,
  type ImportedLog,
} from '../../operations/session-transfer.js';
import { toExportJsonl } from '../../operations/session-export-format.js';

export const OperatorErrorCode = {
  StepNotFound: 'STEP_NOT_FOUND',
  SessionRunning: 'SESSION_RUNNING',
} as const;

/** Runs `body` with the store (and closes it); nothing else is opened. */
async function withStore<T>(body: (ctx: Awaited<ReturnType<typeof openStoreOnly>>) => Promise<T>): Promise<T> {
  const ctx = await openStoreOnly();
  try {
    return await body(ctx);
  } finally {
    await ctx.close();
  }
}

/** The worker's configured profile when it resolves offline (it names generic endpoints' models). */
export function configuredProfile(config: WorkerConfig): ProviderProfile | undefined {
  try {
    return workerProfile(config);
  } catch {
    return undefined;
  }
}

/** Reads the image attachments a log references (the audit checks their digests). */
export function attachmentReader(config: WorkerConfig) {
  const attachments = new AttachmentStore(attachmentRoot(config));
  return (ref: Parameters<AttachmentStore['get']>[0]) => attachments.get(ref);
}

// ---- dh log ----

export async function logCommand(sessionId: string, options: { json?: boolean; from?: number }): Promise<void> {
  await withStore(async ({ store }) => {
    const events = await store.read(sessionId, options.from ?? 0);
    const text = options.json ? toJsonl(events) : events.map((e) => `${eventLine(e)}\n`).join('');
    await writeOut(text);
  });
}

// ---- dh show ----

export async function showCommand(sessionId: string, options: { step?: StepRef; json?: boolean }): Promise<void> {
  if (options.step) return showStep(sessionId, options.step, options.json ?? false);
  const { config, events } = await withStore(async (ctx) => ({
    config: ctx.config,
    events: await ctx.store.read(sessionId),
  }));
  const overview = sessionOverview(sessionId, events);
  if (options.json) {
    await writeOut(`${JSON.stringify(overview, null, 2)}\n`);
    return;
  }
  await writeOut(renderOverview(overview, await workflowStatus(config, sessionId)));
}

async function workflowStatus(config: WorkerConfig, sessionId: string): Promise<string | null> {
  const temporal = await connectIfReachable(config);
  if (temporal.client === null) return null;
  try {
    const description = await temporal.client.workflow.getHandle(sessionWorkflowId(sessionId)).describe();
    return `${description.status.name} (run ${description.runId})`;
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return `none on ${temporal.address}`;
    return `unknown (${messageOf(error)})`;
  } finally {
    await temporal.close();
  }
}

async function showStep(sessionId: string, ref: StepRef, json: boolean): Promise<void> {
  const derived = await withStore(async ({ config, store }) => {
    const events = await store.read(sessionId);
    const sent = sentEvents(events).find((e) => e.turn === ref.turn && e.step === ref.step);
    if (!sent) {
      const known = sentEvents(events).map((e) => `${e.turn}.${e.step}`);
      throw new DhError(
        OperatorErrorCode.StepNotFound,
        `session "${sessionId}" sent no request at step ${ref.turn}.${ref.step}` +
          (known.length > 0 ? ` (steps with requests: ${summarizeIds(known)})` : ' (it sent none yet)'),
        { sessionId },
      );
    }
    const profile = configuredProfile(config);
    return deriveSentRequest(sessionId, events, sent, {
      ...(profile !== undefined ? { profile } : {}),
      readAttachment: attachmentReader(config),
    });
  });
  if (!derived.wire) throw new DhError('REQUEST_UNDERIVABLE', requestHeading(derived), { sessionId });
  if (json) await writeOut(`${derived.wire.body}\n`);
  else await writeOut(`${requestHeading(derived)}\n${renderWireBody(derived.wire.body)}`);
  if (!derived.digestOk) {
    writeErr(`dh: step ${derived.id}: the re-derived body does not match the digest the log recorded`);
    process.exitCode = ExitCode.Error;
  }
}

function summarizeIds(ids: readonly string[]): string {
  return ids.length > 12 ? `${ids.slice(0, 6).join(', ')}, …, ${ids.slice(-3).join(', ')}` : ids.join(', ');
}

// ---- dh audit ----

export async function auditCommand(sessionId: string, options: { json?: boolean; mirror?: boolean }): Promise<void> {
  await withStore(async ({ config, store }) => {
    const temporal = options.mirror === false ? null : await connectIfReachable(config);
    try {
      const profile = configuredProfile(config);
      const report = await auditSession({
        store,
        sessionId,
        ...(profile !== undefined ? { profile } : {}),
        ...(temporal?.client ? { client: temporal.client } : {}),
        ...(config.logKey !== undefined ? { logKey: config.logKey } : {}),
        readAttachment: attachmentReader(config),
      });
      if (options.json) await writeOut(`${JSON.stringify(report, null, 2)}\n`);
      else {
        await writeOut(renderAuditReport(report));
        if (temporal && temporal.client === null) writeErr(`dh: history mirror not checked: ${temporal.reason}`);
      }
      if (!report.ok) process.exitCode = ExitCode.Error;
    } finally {
      if (temporal?.client) await temporal.close();
    }
  });
}

// ---- dh replay ----

export async function replayCommand(sessionId: string, options: { json?: boolean; full?: boolean }): Promise<void> {
  await withStore(async ({ config, store }) => {
    const events = await store.read(sessionId);
    const profile = configuredProfile(config);
    const steps = await deriveSentRequests(sessionId, events, {
      ...(profile !== undefined ? { profile } : {}),
      readAttachment: attachmentReader(config),
    });
    let failed = 0;
    let previous: (typeof steps)[number] | undefined;
    for (const step of steps) {
      if (!step.digestOk) failed++;
      if (options.json) {
        await writeOut(
          `${JSON.stringify({
            step: step.id,
            turn: step.turn,
            stepInTurn: step.step,
            seq: step.sentSeq,
            ok: step.digestOk,
            recordedDigest: step.recordedDigest,
            digest: step.wire?.digest ?? null,
            bytes: step.wire?.bytes ?? null,
            error: step.error,
            body: step.wire ? (JSON.parse(step.wire.body) as unknown) : null,
          })}\n`,
        );
        continue;
      }
      let text = `${requestHeading(step)}\n`;
      if (step.wire) {
        // A prefix-stable request repeats the previous one's messages: show only what it adds.
        const comparable =
          !options.full && previous?.wire && previous.epoch === step.epoch && previous.replaces === step.replaces;
        const shared = comparable && previous?.wire ? sharedMessages(previous.wire.body, step.wire.body) : 0;
        text += renderWireBody(step.wire.body, shared);
      }
      await writeOut(`${text}\n`);
      previous = step;
    }
    const summary = `replayed ${steps.length} request(s) of session ${sessionId}: ${steps.length - failed} match the log${
      failed > 0 ? `, ${failed} DO NOT` : ''
    }`;
    if (options.json) writeErr(summary);
    else await writeOut(`${summary}\n`);
    if (failed > 0) process.exitCode = ExitCode.Error;
  });
}

/** How many leading wire messages two bodies share byte for byte. */
function sharedMessages(previousBody: string, body: string): number {
  const a = (JSON.parse(previousBody) as { messages?: unknown[] }).messages ?? [];
  const b = (JSON.parse(body) as { messages?: unknown[] }).messages ?? [];
  let n = 0;
  while (n < a.length && n < b.length && JSON.stringify(a[n]) === JSON.stringify(b[n])) n++;
  return n;
}

// ---- dh fork ----

export async function forkCommand(sessionId: string, options: { at: number; as?: string }): Promise<void> {
  const ctx = await openCliContext();
  try {
    const forkId = await forkSession(ctx.store, ctx.sessions, sessionId, {
      atSeq: options.at,
      ...(options.as !== undefined ? { as: options.as } : {}),
    });
    await writeOut(`${forkId}\n`);
    writeErr(
      `dh: forked ${sessionId} at seq ${options.at} (seqs 0..${options.at - 1} copied) as ${forkId}; ` +
        `its workflow is running on task queue ${ctx.stack.taskQueue}. Next: dh send ${forkId} "…"`,
    );
    await warnWithoutWorker(ctx, forkId);
  } finally {
    await ctx.close();
  }
}

// ---- dh resume ----

export async function resumeCommand(sessionId: string): Promise<void> {
  const ctx = await openCliContext();
  try {
    const head = await ctx.store.head(sessionId);
    const handle = ctx.client.workflow.getHandle(sessionWorkflowId(sessionId));
    const previous = await handle.describe().catch((error: unknown) => {
      if (error instanceof WorkflowNotFoundError) return null;
      throw error;
    });
    if (previous?.status.name === 'RUNNING') {
      throw new DhError(
        OperatorErrorCode.SessionRunning,
        `session "${sessionId}" is running (run ${previous.runId}); nothing to resume — send it a message instead`,
        { sessionId },
      );
    }
    // A new run over the log: its open step repairs what the last run left open, and its first model
    // step logs a `resume` header.
    const started = await ctx.sessions.open(sessionId);
    const run = await started.describe();
    await writeOut(`${sessionId}\n`);
    writeErr(
      `dh: resumed ${sessionId} (${head} events; previous run ${previous ? `${previous.runId} ${previous.status.name}` : 'none'}) ` +
        `as run ${run.runId} on task queue ${ctx.stack.taskQueue}. Next: dh send ${sessionId} "…"`,
    );
    await warnWithoutWorker(ctx, sessionId);
  } finally {
    await ctx.close();
  }
}

// ---- dh export / import ----

export async function exportCommand(sessionId: string, options: { out?: string }): Promise<void> {
  await withStore(async ({ config, store }) => {
    const events = await store.read(sessionId);
    const text = toExportJsonl(sessionId, events, await store.readChain(sessionId, 0, events.length));
    const refs = attachmentRefs(events);
    if (options.out === undefined) {
      await writeOut(text);
      if (refs.length > 0) writeErr(`dh: ${refs.length} attachment(s) not exported: use --out <file> to copy them`);
      return;
    }
    await writeFile(options.out, text);
    let note = '';
    if (refs.length > 0) {
      const target = attachmentsDirFor(options.out);
      const { copied, missing } = await copyAttachments(
        refs,
        new AttachmentStore(attachmentRoot(config)),
        new AttachmentStore(target),
      );
      note = `, ${copied} attachment(s) into ${target}`;
      if (missing.length > 0) {
        for (const line of missing) writeErr(`dh: attachment not exported: ${line}`);
        process.exitCode = ExitCode.Error;
      }
    }
    writeErr(`dh: exported ${events.length} event(s) of ${sessionId} to ${options.out}${note}`);
  });
}

export async function importCommand(file: string, options: { as?: string }): Promise<void> {
  await withStore(async ({ config, store }) => {
    // Verified as exported (chain, and MACs under DH_LOG_KEY) before anything is written.
    const parsed = await readLogFile(file, config.logKey !== undefined ? { key: config.logKey } : {});
    const sessionId = options.as ?? parsed.sessionId;
    const events = options.as !== undefined ? renamedLog(parsed.events, options.as) : parsed.events;
    if (options.as !== undefined) new Session(sessionId, events);
    // A renamed session/start changes seq 0's digest: the store re-chains every row from the same anchor.
    const chainAnchor = await importAnchor(store, parsed);
    await createSessionFromLog(store, sessionId, events, chainAnchor !== undefined ? { chainAnchor } : {});
    const refs = attachmentRefs(events);
    let note = '';
    if (refs.length > 0) {
      const home = new AttachmentStore(attachmentRoot(config));
      const source = attachmentDirExists(file) ? new AttachmentStore(attachmentsDirFor(file)) : home;
      const { copied, missing } = await copyAttachments(refs, source, home);
      note = `, ${copied} of ${refs.length} attachment(s)`;
      for (const line of missing)
        writeErr(`dh: attachment missing (requests that show it cannot be re-derived): ${line}`);
    }
    await writeOut(`${sessionId}\n`);
    writeErr(
      `dh: imported ${events.length} event(s) from ${file} as session ${sessionId}${note}; ${chainNote(parsed)}. ` +
        `Try: dh audit ${sessionId}; dh resume ${sessionId} starts it`,
    );
  });
}

/**
 * The anchor the imported session is chained from: the file's (so an import keeps the exported chain
 * values); for a fork in a file that carries none, the parent's chain at the fork point when the parent
 * is in this store, else AFTER_UNCHAINED (nothing to bind to).
 */
async function importAnchor(store: SessionStore, parsed: ImportedLog): Promise<string | undefined> {
  if (parsed.chainAnchor !== null) return parsed.chainAnchor;
  const start = parsed.events[0];
  if (start?.type !== 'session/start' || start.parent === undefined) return undefined;
  return (await forkAnchor(store, start.parent.sessionId, start.parent.seedLength)) ?? AFTER_UNCHAINED;
}

function chainNote(parsed: ImportedLog): string {
  const chain = parsed.chain;
  if (chain === null) return 'the file is in export format 1, with no chain to verify (unchained)';
  const unchained = chain.unchained === null ? '' : `, seqs ${chain.unchained.from}..${chain.unchained.to} unchained`;
  const macs = chain.macs === 'verified' ? 'every MAC verified' : 'MACs not checked (no DH_LOG_KEY)';
  return `its chain verified (${chain.links} event(s)${unchained}; ${macs})`;
}

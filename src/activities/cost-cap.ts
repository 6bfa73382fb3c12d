// The session cost cap, checked before a request is sent: what the session has spent (from the log) plus
// the most this call can cost (every prompt token uncached, the whole output limit used) must stay within
// the cap, or nothing is sent. Unknown price or output limit with a cap set: refused too (fail closed).
import type { BuiltRequest } from '../core/build-request.js';
import type { Session, StepCost } from '../core/index.js';
import { modelEntry } from '../config/worker-profile.js';
import { costOf, priceFor, worstCaseCost, type ModelPrice } from '../providers/pricing.js';
import type { SessionRuntime } from './session-runtime.js';

export const COST_CAP_EXCEEDED = 'COST_CAP_EXCEEDED';

export interface CostVerdict {
  /** The model's price by the worker's table, when known: the answer's cost is logged with it. */
  readonly price: ModelPrice | undefined;
  /** The most this call can cost, when a cap applies (a tenant's cap holds it while the call runs). */
  readonly worstUsd?: number;
  /** The worst case in words, for a refusal's message. */
  readonly estimate?: string;
  /** Set when the call must not be sent (the turn ends `budget` with it). */
  readonly refusal?: { readonly code: string; readonly message: string };
}

/** `tenantCapUsd`: the worker's tenant's cap, whose hold the caller takes with the verdict's worst case. */
export function costVerdict(
  runtime: SessionRuntime,
  session: Session,
  request: BuiltRequest,
  wireBytes: number,
  tenantCapUsd?: number,
): CostVerdict {
  const { provider, model } = request.config;
  const price = runtime.pricing ? priceFor(runtime.pricing, provider, model) : undefined;
  const sessionCap = runtime.sessionCostCapUsd;
  if (sessionCap === undefined && tenantCapUsd === undefined) return { price };
  const capName =
    sessionCap !== undefined ? `the session cost cap ($${sessionCap})` : `the tenant cost cap ($${tenantCapUsd})`;
  const refuse = (message: string): CostVerdict => ({ price, refusal: { code: COST_CAP_EXCEEDED, message } });
  const bound = worstCaseOf(runtime, session, request, wireBytes);
  if ('problem' in bound) {
    return refuse(
      bound.problem === 'no-price'
        ? `${capName} is set but "${provider}/${model}" has no price: add it to DH_PRICING, ` +
            'or nothing can be sent under the cap'
        : `${capName} is set but the call has no output limit: set DH_MAX_TOKENS`,
    );
  }
  const { promptTokens, maxOutput, worstUsd: worst } = bound;
  const estimate = `this call may cost up to $${usd(worst)} (${promptTokens} prompt tokens at most + ${maxOutput} output tokens, "${provider}/${model}")`;
  if (sessionCap !== undefined) {
    const spent = sessionSpentUsd(session, bound.price);
    if (spent + worst > sessionCap) {
      return refuse(`the session cost cap ($${sessionCap}) would be exceeded: spent $${usd(spent)}, and ${estimate}`);
    }
  }
  return { price, worstUsd: worst, estimate };
}

/** The most one call can cost at the worker's price, or why that cannot be bounded. */
export type WorstCase =
  | { readonly price: ModelPrice; readonly worstUsd: number; readonly promptTokens: number; readonly maxOutput: number }
  | { readonly problem: 'no-price' | 'no-output-limit' };

/**
 * Every prompt token uncached (at most the body's bytes, tighter with a reported prompt) and the whole output
 * limit: the request's, the model's, else the header's window. Shared by the caps and `dh eval`'s budget.
 */
export function worstCaseOf(
  runtime: SessionRuntime,
  session: Session,
  request: BuiltRequest,
  wireBytes: number,
): WorstCase {
  const { provider, model } = request.config;
  const price = runtime.pricing ? priceFor(runtime.pricing, provider, model) : undefined;
  if (!price) return { problem: 'no-price' };
  const maxOutput =
    request.config.maxTokens ??
    modelEntry(runtime.profile, model)?.maxOutputTokens ??
    session.requestHeader()?.contextWindow;
  if (maxOutput === undefined) return { problem: 'no-output-limit' };
  const promptTokens = promptTokensAtMost(session, wireBytes);
  return {
    price,
    maxOutput,
    promptTokens,
    worstUsd: worstCaseCost({ promptTokens, maxOutputTokens: maxOutput }, price),
  };
}

/** The refusal of a call that does not fit under the tenant's cap. */
export function tenantRefusal(
  tenant: string,
  hold: { committedUsd: number; capUsd: number },
  verdict: CostVerdict,
): NonNullable<CostVerdict['refusal']> {
  return {
    code: COST_CAP_EXCEEDED,
    message:
      `the tenant "${tenant}" cost cap ($${hold.capUsd}) would be exceeded: its sessions committed ` +
      `$${usd(hold.committedUsd)}, and ${verdict.estimate ?? `this call may cost up to $${usd(verdict.worstUsd ?? 0)}`}`,
  };
}

/** The logged cost of an answer, when its price and usage are known. */
export function stepCost(
  price: ModelPrice | undefined,
  usage: Parameters<typeof costOf>[0] | undefined,
): StepCost | undefined {
  if (!price || !usage) return undefined;
  return { usd: costOf(usage, price), price: { ...price } };
}

/** What the session's answers cost: as logged, or (answers logged without a cost) at `price`. */
export function sessionSpentUsd(session: Session, price: ModelPrice): number {
  let spent = 0;
  for (const event of session.events) {
    if (event.type !== 'assistant/message') continue;
    if (event.cost) spent += event.cost.usd;
    else if (event.usage) spent += costOf(event.usage, price);
  }
  return spent;
}

/**
 * An upper bound of the request's prompt tokens. A token covers at least one byte, so the body's bytes
 * bound it; with a previous answer's reported prompt, that count plus the bytes appended since is tighter.
 */
function promptTokensAtMost(session: Session, wireBytes: number): number {
  const events = session.events;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e?.type === 'request/header' || e?.type === 'surface/replace') break; // the report no longer applies
    if (e?.type !== 'assistant/message' || !e.usage) continue;
    const sent = events
      .slice(0, i)
      .findLast((x) => x.type === 'request/sent' && x.turn === e.turn && x.step === e.step);
    if (sent?.type !== 'request/sent') break;
    const reported = e.usage.inputUncached + e.usage.cacheRead;
    return Math.min(wireBytes, reported + Math.max(0, wireBytes - sent.bytes));
  }
  return wireBytes;
}

function usd(value: number): string {
  return value.toFixed(6).replace(/0+$/, '').replace(/\.$/, '');
}

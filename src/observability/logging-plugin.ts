// A read-only plugin that writes the worker's structured log lines keyed by session, turn and step:
// each claimed batch, model request, provider call (latency, outcome, cache-read share) and tool call.
// It never changes a decision.
import { cacheReadShare } from '../core/index.js';
import type { Plugin } from '../plugins/plugin.js';
import type { Logger } from './logger.js';

export function loggingPlugin(logger: Logger): Plugin {
  return {
    name: 'structured-log',
    preStep(batch, context) {
      if (batch.length > 0) {
        logger.info('messages claimed', {
          sessionId: context.sessionId,
          turn: context.turn,
          step: context.step,
          count: batch.length,
          origins: [...new Set(batch.map((m) => m.origin))].join(','),
        });
      }
      return undefined;
    },
    onRequest(request, context) {
      logger.info('model request', {
        sessionId: context.sessionId,
        turn: context.turn,
        step: context.step,
        model: request.config.model,
        messages: request.messages.length,
        tools: request.tools.length,
      });
    },
    onModelCall(report, context) {
      const usage = report.usage;
      const share = usage ? cacheReadShare(usage) : null;
      const fields = {
        sessionId: context.sessionId,
        turn: context.turn,
        step: context.step,
        purpose: report.purpose,
        model: report.model,
        attempt: report.attempt,
        outcome: report.outcome,
        errorCode: report.errorCode ?? undefined,
        durationMs: Math.round(report.durationMs),
        firstDeltaMs: report.firstDeltaMs === null ? undefined : Math.round(report.firstDeltaMs),
        inputTokens: usage ? usage.inputUncached + usage.cacheRead : undefined,
        outputTokens: usage ? usage.output + usage.reasoning : undefined,
        cacheReadShare: share === null ? undefined : Number(share.toFixed(3)),
      };
      if (report.outcome === 'error') logger.warn('model call failed', fields);
      else logger.info('model call', fields);
    },
    toolBefore(call, context) {
      logger.info('tool call', {
        sessionId: context.sessionId,
        turn: context.turn,
        step: context.step,
        callId: call.callId,
        tool: call.name,
      });
      return undefined;
    },
    afterTools(context) {
      logger.debug('tools done', { sessionId: context.sessionId, turn: context.turn, step: context.step });
      return [];
    },
  };
}

// The 500 a request gets when the script has no reply left for it, saying why as far as the provider can tell:
// in `match` mode, what the last user message was. A plugin's notice (dh's repeat guard, for one) is injected
// context that becomes the last user message, so a `lastUserContains` written for the task stops matching.
import { apiError, type ApiError } from './api-error.js';
import type { ChatCompletionRequest } from '../providers/chat-completion-request.js';
import { lastUserText } from './reply-queue.js';
import type { LoadedScript } from './script.js';

/** How dh marks injected context in the request (src/core/surface.ts). */
const INJECTED = /^<context source="([^"]*)">/;
const QUOTED_CHARS = 120;

export function scriptExhausted(
  script: LoadedScript,
  request: Pick<ChatCompletionRequest, 'messages'>,
  index: number,
  exhaustedCount: number,
): ApiError {
  const match = script.mode === 'match';
  const message =
    `scripted provider: script exhausted: no reply left for request #${index} ` +
    `(exhausted request ${exhaustedCount}; the script's ${script.replies.length} replies are used up` +
    `${match ? ' or none matches' : ''})${match ? `; ${lastUserNote(lastUserText(request))}` : ''}`;
  return apiError(500, message, { type: 'server_error', code: 'script_exhausted' });
}

/** What `match` compared with, and the likely cause when that is a plugin's notice rather than the user's words. */
function lastUserNote(text: string): string {
  const injected = INJECTED.exec(text);
  if (injected !== null) {
    return (
      `the last user message is injected context from "${injected[1] ?? ''}", not the user's words ` +
      `(dh's repeat guard injects one after a tool call repeats with identical arguments): a lastUserContains ` +
      `written for the task no longer matches; match the notice (e.g. lastUserContains: 'source="${injected[1] ?? ''}"') ` +
      'or add a `default` reply (docs/scripted-provider.md, "Plugins\' notices")'
    );
  }
  const quoted = text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}…` : text;
  return `the last user message is ${JSON.stringify(quoted)}`;
}

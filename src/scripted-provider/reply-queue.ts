// Picks the scripted reply for each valid request: in `ordered` mode the next unused reply, in `match`
// mode the first unused reply whose `match` holds (a reply without `match` matches anything). A reply
// with `repeat: n` is used n times; the script's `default` reply, if any, answers whatever is left
// unanswered, without limit. With `retries: same-reply`, a request equal to one answered before gets that
// answer again. Counts what ran out.
import { createHash } from 'node:crypto';
import { contentText, type ChatCompletionRequest } from '../providers/chat-completion-request.js';
import type { LoadedScript, Reply } from './script.js';

export type Selection =
  | {
      readonly kind: 'reply';
      readonly reply: Reply;
      /** Index in `replies`, or -1 for the script's `default` reply. */
      readonly position: number;
    }
  | { readonly kind: 'exhausted'; readonly exhaustedCount: number };

export interface ReplyQueueStats {
  /** Replies handed out (a repeated reply counts once per use, and so does the `default` reply). */
  readonly used: number;
  /** Uses left over all replies of `replies` (the `default` reply is not counted: it never runs out). */
  readonly remaining: number;
  /** Requests that found no reply. */
  readonly exhausted: number;
  /** Requests answered again as an equal earlier one was (`retries: same-reply`). */
  readonly repeatedRequests: number;
}

type Answerable = Pick<ChatCompletionRequest, 'messages'> & Partial<Pick<ChatCompletionRequest, 'model' | 'tools'>>;

/** What makes two requests the same question: the model, the messages and the tools. */
function requestKey(request: Answerable): string {
  return createHash('sha256')
    .update(JSON.stringify([request.model ?? null, request.messages, request.tools ?? null]))
    .digest('hex');
}

/** The text of the last `user` message ('' when there is none). */
export function lastUserText(request: Pick<ChatCompletionRequest, 'messages'>): string {
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const message = request.messages[i];
    if (message?.role === 'user') return contentText(message.content);
  }
  return '';
}

export class ReplyQueue {
  private readonly remaining: number[];
  private readonly answered = new Map<string, { reply: Reply; position: number }>();
  /** Each request's key, so `peek` then `next` (a quota's admission) hash its messages once. */
  private readonly keys = new WeakMap<Answerable, string>();
  private used = 0;
  private exhausted = 0;
  private repeatedRequests = 0;

  constructor(private readonly script: LoadedScript) {
    this.remaining = script.replies.map((reply) => reply.repeat);
  }

  /** The reply `next` would hand out for `request`, without using it (undefined: none is left). */
  peek(request: Answerable): { reply: Reply; position: number } | undefined {
    return this.earlierAnswer(request) ?? this.unused(request);
  }

  /** With `retries: same-reply`, the answer an equal request got (its key hashed once per request). */
  private earlierAnswer(request: Answerable): { reply: Reply; position: number } | undefined {
    if (this.script.retries !== 'same-reply') return undefined;
    let key = this.keys.get(request);
    if (key === undefined) this.keys.set(request, (key = requestKey(request)));
    return this.answered.get(key);
  }

  /** The first reply left for `request`, or the default. */
  private unused(request: Answerable): { reply: Reply; position: number } | undefined {
    const userText = this.script.mode === 'match' ? lastUserText(request) : '';
    for (const [position, reply] of this.script.replies.entries()) {
      if ((this.remaining[position] ?? 0) <= 0) continue;
      if (this.script.mode === 'match' && reply.match && !userText.includes(reply.match.lastUserContains)) continue;
      return { reply, position };
    }
    return this.script.default === undefined ? undefined : { reply: this.script.default, position: -1 };
  }

  next(request: Answerable): Selection {
    const earlier = this.earlierAnswer(request);
    if (earlier !== undefined) {
      this.repeatedRequests++;
      return { kind: 'reply', ...earlier };
    }
    const picked = this.unused(request);
    if (picked === undefined) {
      this.exhausted++;
      return { kind: 'exhausted', exhaustedCount: this.exhausted };
    }
    if (picked.position >= 0) this.remaining[picked.position] = (this.remaining[picked.position] ?? 0) - 1;
    this.used++;
    // A fault is not an answer: the request sent again after it takes the next reply.
    const key = this.keys.get(request);
    if (key !== undefined && picked.reply.fault === undefined) this.answered.set(key, picked);
    return { kind: 'reply', ...picked };
  }

  stats(): ReplyQueueStats {
    return {
      used: this.used,
      remaining: this.remaining.reduce((sum, n) => sum + n, 0),
      exhausted: this.exhausted,
      repeatedRequests: this.repeatedRequests,
    };
  }
}

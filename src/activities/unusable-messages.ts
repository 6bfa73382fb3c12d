// Which claimed messages a step cannot send: an image this worker cannot read (unknown, damaged, not what its
// reference says), or any image for a model without vision. Such a message is discarded with the reason
// instead of entering the conversation, where it would make every later request of the session fail.
import {
  DhError,
  ErrorCode,
  sha256DigestBytes,
  type AttachmentRef,
  type CallConfig,
  type UserContent,
} from '../core/index.js';
import { modelEntry } from '../config/worker-profile.js';
import type { ClaimedMessage } from '../plugins/contracts.js';
import type { SessionRuntime } from './session-runtime.js';

/** Message id → why it cannot be sent. */
export type Unusable = Map<string, string>;

const UNREADABLE: ReadonlySet<string> = new Set([
  ErrorCode.AttachmentNotFound,
  ErrorCode.AttachmentInvalid,
  ErrorCode.AttachmentCorrupt,
]);

/**
 * The messages citing an image this worker's attachment store cannot give back as referenced (read and
 * verified as the request will read it). A failure of the store itself (not a refusal of the reference) throws.
 */
export async function unreadableAttachments(
  runtime: SessionRuntime,
  messages: readonly ClaimedMessage[],
): Promise<Unusable> {
  const unusable: Unusable = new Map();
  const problems = new Map<string, string | null>();
  for (const message of messages) {
    for (const ref of imagesOf(message.content)) {
      let problem = problems.get(ref.id);
      if (problem === undefined) {
        problem = await readProblem(runtime, ref);
        problems.set(ref.id, problem);
      }
      if (problem !== null) {
        unusable.set(message.messageId, problem);
        break;
      }
    }
  }
  return unusable;
}

/**
 * The messages carrying images when the step's model (by the worker's profile) takes none. A model the profile
 * does not know, or another provider's, is left to the request's own refusal: that is no message's fault.
 */
export function imagesWithoutVision(
  runtime: SessionRuntime,
  config: CallConfig | undefined,
  messages: readonly ClaimedMessage[],
): Unusable {
  const unusable: Unusable = new Map();
  if (config === undefined || config.provider !== runtime.profile.name) return unusable;
  const model = modelEntry(runtime.profile, config.model);
  if (model === undefined || model.vision) return unusable;
  for (const message of messages) {
    const count = imagesOf(message.content).length;
    if (count > 0) {
      unusable.set(
        message.messageId,
        `model "${model.id}" of profile "${runtime.profile.name}" does not accept images (the message carries ${count})`,
      );
    }
  }
  return unusable;
}

async function readProblem(runtime: SessionRuntime, ref: AttachmentRef): Promise<string | null> {
  if (runtime.readAttachment === undefined)
    return `image ${ref.id} cannot be sent: this worker has no attachment store`;
  try {
    // Verified as the request's wire body will verify it (src/providers/wire-body.ts), whatever the reader.
    const bytes = await runtime.readAttachment(ref);
    const digest = sha256DigestBytes(bytes);
    if (digest !== ref.id || bytes.byteLength !== ref.bytes) {
      return `image ${ref.id} reads back as ${bytes.byteLength} bytes with digest ${digest}`;
    }
    return null;
  } catch (error) {
    if (error instanceof DhError && UNREADABLE.has(error.code)) return `image ${ref.id}: ${error.message}`;
    throw error;
  }
}

function imagesOf(content: UserContent): AttachmentRef[] {
  if (typeof content === 'string') return [];
  return content.flatMap((part) => (part.type === 'image' ? [part.attachment] : []));
}

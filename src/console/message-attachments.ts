// The HTTP API's door check of a message's images: each must be in the attachment store the workers read, as
// its reference says (no route uploads one). The model is the worker's to judge: a step discards a message with
// images its model cannot take (src/activities/unusable-messages.ts).
import { DhError, ErrorCode, sha256DigestBytes, type UserContent } from '../core/index.js';
import type { ReadAttachment } from '../providers/wire-body.js';

/** Throws ATTACHMENT_NOT_FOUND or ATTACHMENT_INVALID (a 422) for the first image the store cannot give back. */
export async function checkMessageAttachments(content: UserContent, read: ReadAttachment): Promise<void> {
  if (typeof content === 'string') return;
  for (const [index, part] of content.entries()) {
    if (part.type !== 'image') continue;
    const ref = part.attachment;
    let bytes: Uint8Array;
    try {
      bytes = await read(ref);
    } catch (error) {
      if (error instanceof DhError && error.code === ErrorCode.AttachmentNotFound) {
        throw new DhError(
          ErrorCode.AttachmentNotFound,
          `content.${index}: attachment ${ref.id} is not in the attachment store; store it first`,
          { id: ref.id },
        );
      }
      if (error instanceof DhError && error.code === ErrorCode.AttachmentInvalid) {
        throw new DhError(ErrorCode.AttachmentInvalid, `content.${index}: ${error.message}`, { id: ref.id });
      }
      throw error;
    }
    if (sha256DigestBytes(bytes) !== ref.id || bytes.byteLength !== ref.bytes) {
      throw new DhError(
        ErrorCode.AttachmentInvalid,
        `content.${index}: attachment ${ref.id} has ${bytes.byteLength} bytes, its reference says ${ref.bytes}`,
        { id: ref.id },
      );
    }
  }
}

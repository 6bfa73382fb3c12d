// Content-addressed attachment bytes on the filesystem (`<root>/sha256/<hh>/<hex>`): durable before any
// event refers to them, and re-verified (digest and media type) on every read.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { DhError, ErrorCode } from '../core/errors.js';
import { AttachmentRef } from '../core/messages.js';

export type AttachmentMediaType = AttachmentRef['mediaType'];

/** An attachment is missing, corrupt on disk, or not what its reference or its caller declares. */
export class AttachmentError extends DhError {}

/** Where a configuration's attachment bytes live: `$DH_HOME/attachments` (the worker's, and dh's operator commands'). */
export function attachmentRoot(config: { readonly home: string }): string {
  return join(config.home, 'attachments');
}

export class AttachmentStore {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  /**
   * Stores `bytes` under their sha256 and returns the reference events carry. The file is written to a
   * temp name, fsynced, renamed into place and its directory fsynced, so it survives a crash before
   * the event that cites it is appended. Idempotent; a damaged existing copy is replaced.
   */
  async put(bytes: Uint8Array, mediaType: string, options: { name?: string } = {}): Promise<AttachmentRef> {
    const declared = AttachmentRef.shape.mediaType.safeParse(mediaType);
    if (!declared.success) {
      throw new AttachmentError(ErrorCode.AttachmentInvalid, `unsupported attachment media type "${mediaType}"`, {
        mediaType,
      });
    }
    const sniffed = sniffMediaType(bytes);
    if (sniffed !== declared.data) {
      throw new AttachmentError(
        ErrorCode.AttachmentInvalid,
        `attachment declared as ${mediaType} but its bytes are ${sniffed ?? 'not a supported image'}`,
        { mediaType, sniffed },
      );
    }
    const hex = sha256Hex(bytes);
    const ref: AttachmentRef = {
      id: `sha256:${hex}`,
      mediaType: declared.data,
      bytes: bytes.length,
      ...(options.name !== undefined && { name: options.name }),
    };
    const path = this.pathOf(hex);
    if (await holds(path, hex)) return ref;
    await writeDurably(path, bytes);
    return ref;
  }

  /** The bytes of `ref`, verified: present, matching its digest, length and declared media type. */
  async get(ref: AttachmentRef): Promise<Uint8Array> {
    const parsed = AttachmentRef.safeParse(ref);
    if (!parsed.success) {
      throw new AttachmentError(
        ErrorCode.AttachmentInvalid,
        `malformed attachment reference: ${parsed.error.message}`,
        {
          id: String((ref as { id?: unknown } | null)?.id),
        },
      );
    }
    const { id, mediaType } = parsed.data;
    const hex = id.slice('sha256:'.length);
    let bytes: Uint8Array;
    try {
      bytes = await readFile(this.pathOf(hex));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new AttachmentError(ErrorCode.AttachmentNotFound, `attachment ${id} not found`, { id });
      }
      throw error;
    }
    const actual = sha256Hex(bytes);
    if (actual !== hex) {
      throw new AttachmentError(
        ErrorCode.AttachmentCorrupt,
        `attachment ${id} is corrupt: its bytes hash to sha256:${actual}`,
        {
          id,
          actual: `sha256:${actual}`,
        },
      );
    }
    if (bytes.length !== parsed.data.bytes) {
      throw new AttachmentError(
        ErrorCode.AttachmentInvalid,
        `attachment ${id} has ${bytes.length} bytes, its reference says ${parsed.data.bytes}`,
        { id, bytes: bytes.length },
      );
    }
    const sniffed = sniffMediaType(bytes);
    if (sniffed !== mediaType) {
      throw new AttachmentError(
        ErrorCode.AttachmentInvalid,
        `attachment ${id} is declared ${mediaType} but its bytes are ${sniffed ?? 'not a supported image'}`,
        { id, mediaType, sniffed },
      );
    }
    return bytes;
  }

  private pathOf(hex: string): string {
    return join(this.root, 'sha256', hex.slice(0, 2), hex);
  }
}

/** The media type of an image by its magic number, or null for anything else. */
export function sniffMediaType(bytes: Uint8Array): AttachmentMediaType | null {
  const startsWith = (offset: number, magic: readonly number[]) =>
    bytes.length >= offset + magic.length && magic.every((b, i) => bytes[offset + i] === b);
  const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0));
  if (startsWith(0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(0, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(0, ascii('GIF87a')) || startsWith(0, ascii('GIF89a'))) return 'image/gif';
  if (startsWith(0, ascii('RIFF')) && startsWith(8, ascii('WEBP'))) return 'image/webp';
  return null;
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** True when `path` exists and holds bytes with digest `hex` (a damaged copy is rewritten). */
async function holds(path: string, hex: string): Promise<boolean> {
  try {
    return sha256Hex(await readFile(path)) === hex;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

async function writeDurably(path: string, bytes: Uint8Array): Promise<void> {
  const dir = dirname(path);
  const created = await mkdir(dir, { recursive: true });
  const temp = join(dir, `.${randomBytes(8).toString('hex')}.tmp`);
  try {
    const file = await open(temp, 'wx');
    try {
      await file.writeFile(bytes);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  // The rename is durable only once the directory is; so is each directory `mkdir` just created.
  await fsyncDir(dir);
  if (created !== undefined) {
    for (let d = dir; d !== created && d !== dirname(d); d = dirname(d)) await fsyncDir(dirname(d));
    await fsyncDir(dirname(created));
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

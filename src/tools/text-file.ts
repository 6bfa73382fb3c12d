// Reading and writing workspace text files for the file tools: binary files are refused (a NUL byte
// in the first 8 KiB), huge files are refused, and writes are atomic (temp file + rename).
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { messageOf } from './builtin-tool.js';

/** Files larger than this are not read whole by the file tools (use grep or shell for them). */
export const MAX_TEXT_FILE_BYTES = 16 * 1024 * 1024;

export type TextFile = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly error: string };

/** Reads `absolute` as UTF-8 text; `shown` is the path as the model gave it, for messages. */
export async function readTextFile(absolute: string, shown: string, maxBytes = MAX_TEXT_FILE_BYTES): Promise<TextFile> {
  let size: number;
  try {
    const info = await stat(absolute);
    if (info.isDirectory()) return { ok: false, error: `${shown} is a directory (use list_dir or glob).` };
    if (!info.isFile()) return { ok: false, error: `${shown} is not a regular file.` };
    size = info.size;
  } catch (error) {
    return { ok: false, error: describeFsError(error, shown) };
  }
  if (size > maxBytes) {
    return {
      ok: false,
      error: `${shown} is too large (${size} bytes, the limit is ${maxBytes}); use grep or shell to look into it.`,
    };
  }
  let data: Buffer;
  try {
    data = await readFile(absolute);
  } catch (error) {
    return { ok: false, error: describeFsError(error, shown) };
  }
  if (looksBinary(data)) return { ok: false, error: `${shown} looks like a binary file (it contains NUL bytes).` };
  return { ok: true, text: data.toString('utf8') };
}

/** A NUL byte in the first 8 KiB, the heuristic git and grep use. */
export function looksBinary(data: Uint8Array): boolean {
  return data.subarray(0, 8192).includes(0);
}

/** Whether the file at `absolute` starts with a NUL byte in its first 8 KiB (reads only that much). */
export async function fileLooksBinary(absolute: string): Promise<boolean> {
  const handle = await open(absolute, 'r');
  try {
    const buffer = Buffer.alloc(8192);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return looksBinary(buffer.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}

/**
 * Writes `content` to `absolute` atomically: a temp file in the same directory, then rename, so a
 * crash leaves either the old or the new content. Creates parent directories; keeps an existing mode.
 */
export async function writeFileAtomic(absolute: string, content: string): Promise<void> {
  const dir = dirname(absolute);
  await mkdir(dir, { recursive: true });
  let mode: number | undefined;
  try {
    mode = (await stat(absolute)).mode & 0o7777;
  } catch {
    mode = undefined;
  }
  const temp = join(dir, `.${basename(absolute)}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(temp, content, { flag: 'wx' });
    if (mode !== undefined) await chmod(temp, mode);
    await rename(temp, absolute);
  } catch (error) {
    await unlink(temp).catch(() => undefined);
    throw error;
  }
}

/** An fs error as a sentence for the model. */
export function describeFsError(error: unknown, shown: string): string {
  switch ((error as NodeJS.ErrnoException | undefined)?.code) {
    case 'ENOENT':
      return `${shown} does not exist.`;
    case 'ENOTDIR':
      return `A parent of ${shown} is not a directory.`;
    case 'EISDIR':
      return `${shown} is a directory.`;
    case 'EACCES':
    case 'EPERM':
      return `Permission denied for ${shown}.`;
    default:
      return `Cannot access ${shown}: ${messageOf(error)}`;
  }
}

// The content-addressed attachment store on a real temp directory: round trips, idempotence, and
// refusal of corrupt, missing or mislabelled bytes.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DhError, ErrorCode } from '../../src/core/errors.js';
import type { AttachmentRef } from '../../src/core/messages.js';
import { AttachmentStore, sniffMediaType } from '../../src/stores/attachment-store.js';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0xff, 0xd9]);
const GIF = Buffer.concat([Buffer.from('GIF89a'), Buffer.from([1, 0, 1, 0, 0, 0, 0, 0x3b])]);
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([4, 0, 0, 0]), Buffer.from('WEBPVP8 ')]);

describe('AttachmentStore', () => {
  let root: string;
  let store: AttachmentStore;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'dh-attachments-'));
    store = new AttachmentStore(root);
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const pathOf = (ref: AttachmentRef) => join(root, 'sha256', ref.id.slice(7, 9), ref.id.slice(7));

  it('stores each supported image under its sha256 and reads it back', async () => {
    for (const [bytes, mediaType] of [
      [PNG, 'image/png'],
      [JPEG, 'image/jpeg'],
      [GIF, 'image/gif'],
      [WEBP, 'image/webp'],
    ] as const) {
      const ref = await store.put(new Uint8Array(bytes), mediaType);
      const hex = createHash('sha256').update(bytes).digest('hex');
      expect(ref).toEqual({ id: `sha256:${hex}`, mediaType, bytes: bytes.length });
      expect(await readdir(join(root, 'sha256', hex.slice(0, 2)))).toEqual([hex]);
      expect(Buffer.from(await store.get(ref)).equals(bytes)).toBe(true);
    }
  });

  it('is idempotent and keeps the optional name on the reference', async () => {
    const first = await store.put(PNG, 'image/png');
    const second = await store.put(PNG, 'image/png', { name: 'dot.png' });
    expect(second).toEqual({ ...first, name: 'dot.png' });
    expect(await readdir(join(pathOf(first), '..'))).toEqual([first.id.slice(7)]); // no temp files left
    expect(Buffer.from(await store.get(second)).equals(PNG)).toBe(true);
  });

  it('reports a corrupted file as ATTACHMENT_CORRUPT, and a new put repairs it', async () => {
    const ref = await store.put(PNG, 'image/png');
    const damaged = Buffer.from(PNG);
    damaged.writeUInt8(damaged.readUInt8(damaged.length - 1) ^ 0xff, damaged.length - 1);
    await writeFile(pathOf(ref), damaged);
    await expectCode(store.get(ref), ErrorCode.AttachmentCorrupt);
    await writeFile(pathOf(ref), PNG.subarray(0, 10));
    await expectCode(store.get(ref), ErrorCode.AttachmentCorrupt);
    expect(await store.put(PNG, 'image/png')).toEqual(ref);
    expect(Buffer.from(await store.get(ref)).equals(PNG)).toBe(true);
  });

  it('reports a missing file as ATTACHMENT_NOT_FOUND', async () => {
    const ref = await store.put(PNG, 'image/png');
    await rm(pathOf(ref));
    await expectCode(store.get(ref), ErrorCode.AttachmentNotFound);
  });

  it('refuses bytes that are not the declared media type', async () => {
    await expectCode(store.put(PNG, 'image/jpeg'), ErrorCode.AttachmentInvalid);
    await expectCode(store.put(JPEG, 'image/png'), ErrorCode.AttachmentInvalid);
    await expectCode(store.put(Buffer.from('hello'), 'image/png'), ErrorCode.AttachmentInvalid);
    await expectCode(store.put(PNG, 'image/bmp'), ErrorCode.AttachmentInvalid);
    await expectCode(store.put(new Uint8Array(), 'image/gif'), ErrorCode.AttachmentInvalid);
    expect(await readdir(root)).toEqual([]);
  });

  it('refuses a reference that does not describe the stored bytes', async () => {
    const ref = await store.put(PNG, 'image/png');
    await expectCode(store.get({ ...ref, mediaType: 'image/gif' }), ErrorCode.AttachmentInvalid);
    await expectCode(store.get({ ...ref, bytes: ref.bytes + 1 }), ErrorCode.AttachmentInvalid);
    await expectCode(store.get({ ...ref, id: 'sha256:../../etc/passwd' }), ErrorCode.AttachmentInvalid);
  });

  it('sniffs the four image types by magic number only', () => {
    expect([PNG, JPEG, GIF, WEBP].map((b) => sniffMediaType(b))).toEqual([
      'image/png',
      'image/jpeg',
      'image/gif',
      'image/webp',
    ]);
    expect(sniffMediaType(Buffer.from('RIFF\0\0\0\0WAVE'))).toBeNull();
    expect(sniffMediaType(PNG.subarray(0, 7))).toBeNull();
  });
});

async function expectCode(promise: Promise<unknown>, code: string): Promise<void> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DhError);
  expect((error as DhError).code).toBe(code);
}

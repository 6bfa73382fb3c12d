// The pure parts of the MCP client: model-visible tool names (namespaced, within the tool-name rules,
// collision-free after cleaning), approval-list matching of tools and whole servers, and how a tool result
// becomes the text the model reads (parts in order, images as attachments, the output cap, isError).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ToolSchema } from '../../src/core/index.js';
import { mcpToolName, toolNameMatches } from '../../src/mcp/mcp-tool-name.js';
import { resourceOutputOf, toolOutputOf } from '../../src/mcp/mcp-tool-output.js';
import { AttachmentStore } from '../../src/stores/attachment-store.js';

/** A 1x1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

describe('mcpToolName', () => {
  it('is mcp__<server>__<tool> when the tool name is already valid', () => {
    expect(mcpToolName('everything', 'get-sum')).toBe('mcp__everything__get-sum');
  });

  it('cleans other characters and adds a hash of the original, so cleaned names never collide', () => {
    const dotted = mcpToolName('gh', 'repos.list');
    const underscored = mcpToolName('gh', 'repos_list');
    expect(dotted).toMatch(/^mcp__gh__repos_list_[0-9a-f]{8}$/);
    expect(underscored).toBe('mcp__gh__repos_list');
    expect(dotted).not.toBe(underscored);
  });

  it('keeps every name within the 64 characters the tool-name rule allows, and distinct', () => {
    const long = (suffix: string) => mcpToolName('a-server-name-of-24-char', `${'x'.repeat(60)}${suffix}`);
    expect(long('1')).not.toBe(long('2'));
    for (const name of [long('1'), long('2')]) {
      expect(ToolSchema.safeParse({ name, description: '', parameters: {} }).success).toBe(true);
    }
  });
});

describe('toolNameMatches (approval lists)', () => {
  it.each([
    ['mcp__everything__echo', 'mcp__everything__echo', true],
    ['mcp__everything', 'mcp__everything__echo', true],
    ['mcp__every', 'mcp__everything__echo', false],
    ['mcp__everything__ec', 'mcp__everything__echo', false],
    ['shell', 'shell', true],
    ['she', 'shell', false],
  ])('%s names %s: %s', (entry, tool, expected) => {
    expect(toolNameMatches(entry, tool)).toBe(expected);
  });
});

describe('toolOutputOf', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dh-mcp-output-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('joins the parts in order; an image becomes an attachment cited by id', async () => {
    const attachments = new AttachmentStore(dir);
    const out = await toolOutputOf(
      {
        content: [
          { type: 'text', text: 'before' },
          { type: 'image', data: PNG, mimeType: 'image/png' },
          { type: 'resource_link', uri: 'test://static/resource/1', name: 'Resource 1' },
          { type: 'resource', resource: { uri: 'test://x', text: 'embedded text' } },
        ],
      },
      { maxChars: 10_000, attachments },
    );
    expect(out.status).toBe('ok');
    const lines = out.output.split('\n');
    expect(lines[0]).toBe('before');
    const id = /^\[image (sha256:[0-9a-f]{64}) \(image\/png, (\d+) bytes\)\]$/.exec(lines[1] ?? '');
    expect(id).not.toBeNull();
    expect(
      (await attachments.get({ id: id?.[1] as string, mediaType: 'image/png', bytes: Number(id?.[2]) })).length,
    ).toBe(Number(id?.[2]));
    expect(lines.slice(2)).toEqual(['[resource test://static/resource/1 (Resource 1)]', 'embedded text']);
  });

  it('isError is an error result; structured content stands in when there is no content', async () => {
    expect(await toolOutputOf({ content: [{ type: 'text', text: 'no' }], isError: true }, { maxChars: 100 })).toEqual({
      status: 'error',
      output: 'no',
    });
    expect(await toolOutputOf({ content: [], structuredContent: { sum: 5 } }, { maxChars: 100 })).toEqual({
      status: 'ok',
      output: '{"sum":5}',
    });
  });

  it('cuts the output at the cap and says so', async () => {
    const out = await toolOutputOf({ content: [{ type: 'text', text: 'y'.repeat(5_000) }] }, { maxChars: 1_000 });
    expect(out.output).toBe(`${'y'.repeat(1_000)}\n[output cut at 1000 of 5000 characters]`);
    const resource = resourceOutputOf({ contents: [{ uri: 'a', text: 'z'.repeat(2_000) }] }, 1_000);
    expect(resource.output).toMatch(/\[output cut at 1000 of 2000 characters\]$/);
  });
});

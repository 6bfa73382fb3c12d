// What an MCP tool result becomes for the model: its text parts in order, images stored as content-
// addressed attachments and cited by id, other parts described, `isError` as an error result, all cut at
// the server's output cap (saying so).
import type { CallToolResult, ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolOutput } from '../plugins/contracts.js';
import type { AttachmentStore } from '../stores/attachment-store.js';

export interface McpOutputOptions {
  readonly maxChars: number;
  /** Where image parts are kept; without one they are only described. */
  readonly attachments?: AttachmentStore;
}

type ContentPart = CallToolResult['content'][number];

export async function toolOutputOf(result: CallToolResult, options: McpOutputOptions): Promise<ToolOutput> {
  const parts: string[] = [];
  for (const part of result.content ?? []) parts.push(await partText(part, options));
  if (parts.length === 0 && result.structuredContent !== undefined)
    parts.push(JSON.stringify(result.structuredContent));
  return { status: result.isError === true ? 'error' : 'ok', output: capped(parts.join('\n'), options.maxChars) };
}

export function resourceOutputOf(result: ReadResourceResult, maxChars: number): ToolOutput {
  const parts = result.contents.map((content) =>
    'text' in content && typeof content.text === 'string'
      ? content.text
      : `[${content.uri}: ${content.mimeType ?? 'binary'}, ${'blob' in content ? base64Bytes(String(content.blob)) : 0} bytes, not shown]`,
  );
  return { status: 'ok', output: capped(parts.join('\n'), maxChars) };
}

async function partText(part: ContentPart, options: McpOutputOptions): Promise<string> {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'image': {
      const bytes = Buffer.from(part.data, 'base64');
      if (!options.attachments) return `[image ${part.mimeType}, ${bytes.length} bytes, not kept]`;
      try {
        const ref = await options.attachments.put(bytes, part.mimeType);
        return `[image ${ref.id} (${ref.mediaType}, ${ref.bytes} bytes)]`;
      } catch (error) {
        return `[image ${part.mimeType}, ${bytes.length} bytes, not kept: ${error instanceof Error ? error.message : String(error)}]`;
      }
    }
    case 'audio':
      return `[audio ${part.mimeType}, ${base64Bytes(part.data)} bytes, not shown]`;
    case 'resource_link':
      return `[resource ${part.uri}${part.name ? ` (${part.name})` : ''}]`;
    case 'resource': {
      const resource = part.resource;
      if ('text' in resource && typeof resource.text === 'string') return resource.text;
      return `[resource ${resource.uri}: ${resource.mimeType ?? 'binary'}, not shown]`;
    }
    default:
      return `[${(part as { type: string }).type} content, not shown]`;
  }
}

function capped(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n[output cut at ${maxChars} of ${text.length} characters]`;
}

function base64Bytes(data: string): number {
  return Buffer.from(data, 'base64').length;
}

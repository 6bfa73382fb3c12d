// The MCP servers' tools as the model sees them: `mcp__<server>__<tool>`, sorted by that name (never in the
// order a server happened to list them, which changes across reconnects and would break prompt caches),
// plus `list_resources` / `read_resource` for a server with resources. Calls run like built-in tools.
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ToolSchema } from '../core/index.js';
import type { ToolContext, ToolDefinition, ToolOutput } from '../plugins/contracts.js';
import type { AttachmentStore } from '../stores/attachment-store.js';
import { toolIdempotent, toolTimeoutMs } from './mcp-config.js';
import type { McpConnection } from './mcp-connection.js';
import type { McpHub, McpServerSlot } from './mcp-hub.js';
import { mcpToolName } from './mcp-tool-name.js';
import { resourceOutputOf, toolOutputOf } from './mcp-tool-output.js';

export interface McpToolsOptions {
  /** Where image results are kept (the worker's attachment store). */
  readonly attachments?: AttachmentStore;
}

export function mcpTools(hub: McpHub, options: McpToolsOptions = {}): ToolDefinition[] {
  const tools: ToolDefinition[] = [];
  for (const slot of hub.slots) {
    const status = hub.status.find((s) => s.name === slot.entry.name);
    if (status?.state !== 'ready') continue;
    for (const tool of status.tools) {
      tools.push({
        schema: {
          name: mcpToolName(slot.entry.name, tool.name),
          description: tool.description ?? tool.title ?? '',
          // JSON from the server, so JSON-safe; recorded in the header as the model saw it.
          parameters: tool.inputSchema as unknown as ToolSchema['parameters'],
        },
        idempotent: toolIdempotent(slot.entry, tool.name),
        run: (args, context) =>
          call(slot, context, async (connection) =>
            toolOutputOf(
              await connection.callTool(tool.name, argumentsOf(args), {
                signal: context.signal,
                timeoutMs: toolTimeoutMs(slot.entry, tool.name),
                ...(context.progress ? { onProgress: context.progress } : {}),
              }),
              {
                maxChars: slot.entry.maxOutputChars,
                ...(options.attachments ? { attachments: options.attachments } : {}),
              },
            ),
          ),
      });
    }
    // Unless the server has tools of those names itself (two tools may not share a name).
    const own = new Set(status.tools.map((tool) => tool.name));
    if (status.resources && !own.has('list_resources') && !own.has('read_resource')) tools.push(...resourceTools(slot));
  }
  return tools.sort((a, b) => (a.schema.name < b.schema.name ? -1 : a.schema.name > b.schema.name ? 1 : 0));
}

function resourceTools(slot: McpServerSlot): ToolDefinition[] {
  const server = slot.entry.name;
  const limits = (context: ToolContext) => ({ signal: context.signal, timeoutMs: slot.entry.timeoutMs });
  return [
    {
      schema: {
        name: mcpToolName(server, 'list_resources'),
        description: `List the resources the MCP server "${server}" offers (uri, name, media type).`,
        parameters: { type: 'object', properties: {}, additionalProperties: false },
      },
      idempotent: true,
      run: (_args, context) =>
        call(slot, context, async (connection) => {
          const resources = await connection.listResources(limits(context));
          const lines = resources.map((r) => `${r.uri}\t${r.name}${r.mimeType ? `\t${r.mimeType}` : ''}`);
          return { status: 'ok', output: lines.length > 0 ? lines.join('\n') : '(no resources)' };
        }),
    },
    {
      schema: {
        name: mcpToolName(server, 'read_resource'),
        description: `Read one resource of the MCP server "${server}" by its uri (see its list_resources).`,
        parameters: {
          type: 'object',
          properties: { uri: { type: 'string', description: 'The resource uri.' } },
          required: ['uri'],
          additionalProperties: false,
        },
      },
      idempotent: true,
      run: (args, context) => {
        const uri = (argumentsOf(args) as { uri?: unknown }).uri;
        if (typeof uri !== 'string' || uri === '') {
          return Promise.resolve({ status: 'error', output: 'read_resource needs a "uri" string.' });
        }
        return call(slot, context, async (connection) =>
          resourceOutputOf(await connection.readResource(uri, limits(context)), slot.entry.maxOutputChars),
        );
      },
    },
  ];
}

/**
 * Runs one request on the session's connection. Server and protocol failures are results the model reads;
 * an interrupt leaves as a throw (the caller turns it into a cancelled step).
 */
async function call(
  slot: McpServerSlot,
  context: ToolContext,
  use: (connection: McpConnection) => Promise<ToolOutput>,
): Promise<ToolOutput> {
  try {
    const output = await slot.with(context.workspace, use);
    return { ...output, output: slot.mask(output.output) };
  } catch (error) {
    if (context.signal.aborted) throw error;
    const reason =
      error instanceof McpError
        ? `MCP error ${error.code}: ${error.message}`
        : error instanceof Error
          ? error.message
          : String(error);
    return { status: 'error', output: slot.mask(`The MCP server "${slot.entry.name}" failed: ${reason}`) };
  }
}

function argumentsOf(args: unknown): Record<string, unknown> {
  return typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
}

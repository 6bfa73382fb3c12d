// The model-visible name of an MCP tool: `mcp__<server>__<tool>`, within the 64 characters and the
// alphabet tool names allow. A name that had to change gets a short hash of the original, so two tools
// never collide after cleaning.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

export const MCP_TOOL_PREFIX = 'mcp__';
const MAX_NAME = 64;

export function mcpToolName(server: string, tool: string): string {
  const clean = tool.replace(/[^a-zA-Z0-9_-]/g, '_');
  const name = `${MCP_TOOL_PREFIX}${server}__${clean}`;
  if (clean === tool && name.length <= MAX_NAME) return name;
  const hash = bytesToHex(sha256(utf8ToBytes(tool))).slice(0, 8);
  return `${name.slice(0, MAX_NAME - hash.length - 1)}_${hash}`;
}

/** Whether an approval-list entry names this tool: the tool itself, or `mcp__<server>` for all of a server's tools. */
export function toolNameMatches(entry: string, tool: string): boolean {
  if (entry === tool) return true;
  return entry.startsWith(MCP_TOOL_PREFIX) && !entry.slice(MCP_TOOL_PREFIX.length).includes('__')
    ? tool.startsWith(`${entry}__`)
    : false;
}

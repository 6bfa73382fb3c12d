// What the built-in tools share: the `BuiltinTool` shape (a ToolDefinition plus the approval hint),
// the zod → JSON Schema conversion of their arguments, and argument errors the model can act on.
import { z } from 'zod';
import type { ToolDefinition, ToolOutput } from '../plugins/contracts.js';
import { ToolSchema } from '../core/index.js';

export interface BuiltinTool extends ToolDefinition {
  readonly concurrencySafe: boolean;
  /**
   * The tool can reach beyond the workspace (today: the shell when no OS sandbox is available). The
   * approval plugin defaults to `ask` for such tools.
   */
  readonly requiresApproval: boolean;
}

/** The tool schema for `args` (an object schema), as JSON Schema of the input side, without `$schema`. */
export function toolSchema(name: string, description: string, args: z.ZodType): ToolSchema {
  // `io: 'input'` makes fields with defaults optional, which is what the model may send.
  const { $schema: _dialect, ...parameters } = z.toJSONSchema(args, { io: 'input' });
  return ToolSchema.parse({ name, description, parameters });
}

export type ParsedArgs<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ToolOutput };

/** Parses `args` with `schema`; a mismatch becomes an error result that names each offending field. */
export function parseArgs<T extends z.ZodType>(tool: string, schema: T, args: unknown): ParsedArgs<z.output<T>> {
  const parsed = schema.safeParse(args);
  if (parsed.success) return { ok: true, value: parsed.data };
  const problems = parsed.error.issues.map((issue) => {
    const field = issue.path.length > 0 ? issue.path.map(String).join('.') : 'arguments';
    if (issue.code === 'unrecognized_keys') {
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => JSON.stringify(key)).join(', ')}`;
    }
    return `${field}: ${issue.message.replace(/^Invalid input: /, '')}`;
  });
  return { ok: false, error: fail(`Invalid arguments for ${tool}: ${problems.join('; ')}.`) };
}

export function ok(output: string): ToolOutput {
  return { status: 'ok', output };
}

export function fail(output: string): ToolOutput {
  return { status: 'error', output };
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// defineTool: a tool from a zod schema of its arguments and a function of the parsed arguments. The schema
// becomes the JSON Schema the model sees; arguments that do not parse are answered to the model, never run.
import type { z } from 'zod';
import type { ToolContext, ToolDefinition, ToolOutput } from '../plugins/contracts.js';
import { ok, parseArgs, toolSchema } from './builtin-tool.js';

export interface ToolSpec<Args extends z.ZodObject> {
  /** The name the model calls it by: 1-64 of [a-zA-Z0-9_-]. */
  readonly name: string;
  readonly description: string;
  /** The arguments, as a zod object schema (`.describe()` on a field reaches the model). */
  readonly parameters: Args;
  /**
   * Safe to run again after a crash left its outcome unknown (a read, an upsert by key). Default false: a call
   * a crash interrupted is answered `interrupted` to the model instead of being run twice.
   */
  readonly idempotent?: boolean;
  /** Changes nothing outside its result. */
  readonly readOnly?: boolean;
  /** May run beside other concurrency-safe calls of the same step. */
  readonly concurrencySafe?: boolean;
  /** Local and short (see ToolDefinition.quick); never for a network call. */
  readonly quick?: boolean;
  /**
   * Runs the call. A string is an `ok` result; return `{ status: 'error', output }` for a failure the model should
   * act on. A throw is answered to the model as an error result with its message.
   */
  run(args: z.output<Args>, context: ToolContext): Promise<string | ToolOutput> | string | ToolOutput;
}

export function defineTool<Args extends z.ZodObject>(spec: ToolSpec<Args>): ToolDefinition {
  const schema = toolSchema(spec.name, spec.description, spec.parameters);
  return Object.freeze({
    schema,
    idempotent: spec.idempotent ?? false,
    ...(spec.readOnly !== undefined ? { readOnly: spec.readOnly } : {}),
    ...(spec.concurrencySafe !== undefined ? { concurrencySafe: spec.concurrencySafe } : {}),
    ...(spec.quick !== undefined ? { quick: spec.quick } : {}),
    async run(args: unknown, context: ToolContext): Promise<ToolOutput> {
      const parsed = parseArgs(spec.name, spec.parameters, args);
      if (!parsed.ok) return parsed.error;
      // A throw is the activity's to answer (run-tool.ts): an error result, or the interrupt it was.
      const result = await spec.run(parsed.value, context);
      return typeof result === 'string' ? ok(result) : result;
    },
  });
}

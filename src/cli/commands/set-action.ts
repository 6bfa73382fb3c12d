// What `dh set` does; message-commands.ts defines it and loads this module when it runs. The configure update
// takes a session's overrides as a whole, so the flags are merged over the set in force (the latest
// `agent/overrides` of its log) unless `--clear` starts from none.
import { readFileSync } from 'node:fs';
import { AgentOverrides, type SessionEvent } from '../../core/index.js';
import { openCliContext } from '../cli-context.js';
import { cliAction, sessionArg } from '../cli-action.js';
import { usageError } from '../exit-codes.js';
import { withWorkerCheck } from '../worker-warning.js';

export interface SetOptions {
  model?: string;
  temperature?: string;
  maxTokens?: string;
  system?: string;
  systemFile?: string;
  systemAppend?: string;
  tools?: string;
  clear?: boolean;
  json?: boolean;
}

export const setCommand = cliAction(async (session: string, options: SetOptions) => {
  const sessionId = sessionArg(session);
  const flags = overridesOf(options);
  if (Object.keys(flags).length === 0 && options.clear !== true) {
    throw usageError(
      'nothing to set: give --model, --temperature, --max-tokens, --system, --system-file, --system-append, ' +
        '--tools, or --clear',
    );
  }
  // The flags alone before anything connects: each field is checked on its own, so the merge holds too.
  checked(flags);
  const ctx = await openCliContext();
  try {
    const inForce = options.clear === true ? {} : latestOverrides(await ctx.store.read(sessionId).catch(() => []));
    const merged = checked({ ...inForce, ...flags });
    const result = await withWorkerCheck(ctx, sessionId, () =>
      ctx.sessions.configure(sessionId, merged, { source: 'cli' }),
    );
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ sessionId, ...result })}\n`);
      return;
    }
    process.stdout.write(
      `${result.changed ? 'set' : 'unchanged'}: the overrides of ${sessionId} in force` +
        `${result.changed ? ' from its next step' : ''}:\n${describeOverrides(result.overrides)}`,
    );
  } finally {
    await ctx.close();
  }
});

/** The overrides the flags name (each checked by AgentOverrides after the merge). */
function overridesOf(options: SetOptions): AgentOverrides {
  if (options.system !== undefined && options.systemFile !== undefined) {
    throw usageError('give --system or --system-file, not both');
  }
  const system = options.systemFile !== undefined ? fileText(options.systemFile) : options.system;
  const tools = options.tools
    ?.split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  return {
    ...(options.model !== undefined ? { model: options.model } : {}),
    ...(options.temperature !== undefined ? { temperature: numberArg('--temperature', options.temperature) } : {}),
    ...(options.maxTokens !== undefined ? { maxTokens: numberArg('--max-tokens', options.maxTokens) } : {}),
    ...(system !== undefined ? { system } : {}),
    ...(options.systemAppend !== undefined ? { systemAppend: options.systemAppend } : {}),
    ...(tools !== undefined ? { tools } : {}),
  };
}

function checked(overrides: AgentOverrides): AgentOverrides {
  const parsed = AgentOverrides.safeParse(overrides);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw usageError(`invalid overrides: ${issue?.path.join('.') || 'overrides'}: ${issue?.message ?? 'invalid'}`);
}

/** The overrides in force: the latest `agent/overrides` of the log (none: `{}`). */
function latestOverrides(events: readonly SessionEvent[]): AgentOverrides {
  const last = events.findLast((event) => event.type === 'agent/overrides');
  return last?.type === 'agent/overrides' ? last.overrides : {};
}

function numberArg(flag: string, text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw usageError(`${flag} "${text}" is not a number`);
  return value;
}

function fileText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw usageError(`--system-file: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
}

/** One line per override in force, or the line that says there are none. */
function describeOverrides(overrides: AgentOverrides): string {
  const lines = [
    ...(overrides.model !== undefined ? [['model', overrides.model]] : []),
    ...(overrides.temperature !== undefined ? [['temperature', String(overrides.temperature)]] : []),
    ...(overrides.maxTokens !== undefined ? [['max tokens', String(overrides.maxTokens)]] : []),
    ...(overrides.system !== undefined ? [['system', preview(overrides.system)]] : []),
    ...(overrides.systemAppend !== undefined ? [['system append', preview(overrides.systemAppend)]] : []),
    ...(overrides.tools !== undefined ? [['tools', overrides.tools.join(', ') || '(none)']] : []),
  ];
  if (lines.length === 0) return "  none: the session runs its agent's definition as it is\n";
  const width = Math.max(...lines.map(([name]) => (name ?? '').length));
  return lines.map(([name, value]) => `  ${(name ?? '').padEnd(width)}  ${value ?? ''}\n`).join('');
}

/** A prompt on one line: its first 80 characters, and its length when cut. */
function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= 80 ? JSON.stringify(flat) : `${JSON.stringify(`${flat.slice(0, 80)}…`)} (${text.length} chars)`;
}

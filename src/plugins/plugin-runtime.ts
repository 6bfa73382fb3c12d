// Composes a list of plugins into the hooks the session activities call: the header (prefix once per
// loop instance, the request waterfall, the tool list), the pre-step decision, the approval gate,
// outbound, stream, model-call, tool-progress and limiter-wait observers, notices, and eval judges.
import { deepFreeze, type CallConfig, type Message, type RequestHeader } from '../core/index.js';
import type { SessionRuntime } from '../activities/session-runtime.js';
import type { PreStepDecision, StepContext, ToolDefinition, ToolGate } from './contracts.js';
import type { Plugin } from './plugin.js';

export type PluginHooks = Pick<
  SessionRuntime,
  | 'composeHeader'
  | 'preStep'
  | 'tools'
  | 'toolBefore'
  | 'onRequest'
  | 'onStreamDelta'
  | 'onModelCall'
  | 'onToolProgress'
  | 'onLimiterWait'
  | 'afterTools'
  | 'judges'
>;

export interface PluginRuntimeOptions {
  readonly plugins: readonly Plugin[];
  /** The call configuration the request waterfall starts from (provider, model, ...). */
  readonly seed: CallConfig;
  /** Where contained observer failures are reported. */
  readonly warn?: (message: string) => void;
}

export function createPluginRuntime(options: PluginRuntimeOptions): Required<PluginHooks> {
  const { plugins } = options;
  const warn = options.warn ?? ((message: string) => console.warn(message));
  const seed = deepFreeze(structuredClone(options.seed));
  const toolList: ToolDefinition[] = plugins.flatMap((p) => p.tools?.() ?? []);
  const tools = new Map<string, ToolDefinition>();
  for (const tool of toolList) {
    if (tools.has(tool.schema.name)) throw new Error(`two plugins register the tool "${tool.schema.name}"`);
    tools.set(tool.schema.name, tool);
  }
  const schemas = toolList.map((t) => t.schema);
  /** Runs a read-only observer hook of every plugin; a throw is contained and reported, never propagated. */
  const observe = (kind: string, call: (plugin: Plugin) => void): void => {
    for (const plugin of plugins) {
      try {
        call(plugin);
      } catch (error) {
        warn(
          `${kind} observer ${plugin.name} failed (contained): ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
  };

  return {
    tools,
    async composeHeader(context) {
      const pluginContext: StepContext = {
        sessionId: context.sessionId,
        turn: context.turn,
        step: context.step,
        events: context.events,
      };
      let system: string | undefined;
      let prefix: readonly Message[] | undefined;
      if (context.firstOfInstance || !context.current) {
        const parts: string[] = [];
        const messages: Message[] = [];
        for (const plugin of plugins) {
          const contribution = await plugin.sessionPrefix?.(pluginContext);
          if (contribution?.system) parts.push(contribution.system);
          if (contribution?.messages) messages.push(...contribution.messages);
        }
        system = parts.length > 0 ? parts.join('\n\n') : undefined;
        prefix = messages.length > 0 ? messages : undefined;
      } else {
        // Within a loop instance the prefix is frozen: reuse exactly what the header recorded.
        system = context.current.system;
        prefix = context.current.prefix;
      }
      let config: CallConfig = seed;
      for (const plugin of plugins) {
        if (plugin.request) config = deepFreeze(structuredClone(await plugin.request(config, pluginContext)));
      }
      const header: RequestHeader = {
        config,
        ...(system !== undefined ? { system } : {}),
        ...(schemas.length > 0 ? { tools: schemas } : {}),
        ...(prefix !== undefined ? { prefix: [...prefix] } : {}),
      };
      return structuredClone(header);
    },
    async preStep(batch, context) {
      let current = batch;
      for (const plugin of plugins) {
        const decision: PreStepDecision | undefined = await plugin.preStep?.(current, context);
        if (!decision) continue;
        if (decision.decision === 'reject') return { decision: 'reject', reason: `${plugin.name}: ${decision.reason}` };
        if (decision.messages) current = decision.messages;
      }
      return current === batch ? { decision: 'enter' } : { decision: 'enter', messages: current };
    },
    async toolBefore(call, context: StepContext): Promise<ToolGate> {
      // The strictest opinion wins: deny over ask over allow.
      let ask: string | undefined;
      for (const plugin of plugins) {
        const decision = await plugin.toolBefore?.(call, context);
        if (decision?.decision === 'deny') return { decision: 'deny', reason: `${plugin.name}: ${decision.reason}` };
        if (decision?.decision === 'ask') ask ??= `${plugin.name}: ${decision.reason}`;
      }
      return ask !== undefined ? { decision: 'ask', reason: ask } : { decision: 'allow' };
    },
    onRequest(request, context) {
      let current = request;
      for (const plugin of plugins) current = plugin.onRequest?.(current, context) ?? current;
      return current;
    },
    onStreamDelta(delta, context) {
      const frozen = deepFreeze(structuredClone(delta));
      observe('stream', (plugin) => plugin.onStreamDelta?.(frozen, context));
    },
    onModelCall(report, context) {
      const frozen = deepFreeze(structuredClone(report));
      observe('model-call', (plugin) => plugin.onModelCall?.(frozen, context));
    },
    onToolProgress(report, context) {
      const frozen = deepFreeze(structuredClone(report));
      observe('tool-progress', (plugin) => plugin.onToolProgress?.(frozen, context));
    },
    onLimiterWait(report, context) {
      const frozen = deepFreeze(structuredClone(report));
      observe('limiter-wait', (plugin) => plugin.onLimiterWait?.(frozen, context));
    },
    // Each plugin with a `judge` hook is one judge of `dh eval`, named after the plugin.
    judges: plugins.flatMap((plugin) => {
      const judge = plugin.judge?.bind(plugin);
      return judge ? [{ name: plugin.name, judge }] : [];
    }),
    async afterTools(context) {
      const notices: { source: string; content: string }[] = [];
      for (const plugin of plugins) {
        for (const notice of (await plugin.afterTools?.(context)) ?? [])
          notices.push({ source: plugin.name, content: notice.content });
      }
      return notices;
    },
  };
}

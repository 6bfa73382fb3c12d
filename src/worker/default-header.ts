// The request header a plain worker composes: the configured model and system prompt, the registered
// tools in a stable order, no session prefix. Plugins replace this composition (default-plugins.ts).
import type { CallConfig, RequestHeader } from '../core/index.js';
import type { HeaderContext } from '../activities/session-runtime.js';
import type { ToolDefinition } from '../plugins/contracts.js';

export function defaultHeaderComposer(options: {
  config: CallConfig;
  system?: string;
  tools: ReadonlyMap<string, ToolDefinition>;
}): (context: HeaderContext) => Promise<RequestHeader> {
  const tools = [...options.tools.values()]
    .map((t) => t.schema)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return (context) => {
    const header: RequestHeader = {
      config: options.config,
      ...(options.system !== undefined ? { system: options.system } : {}),
      ...(tools.length > 0 ? { tools } : {}),
      // The prefix is composed once per loop instance; later steps keep the recorded one.
      ...(!context.firstOfInstance && context.current?.prefix ? { prefix: context.current.prefix } : {}),
    };
    return Promise.resolve(header);
  };
}

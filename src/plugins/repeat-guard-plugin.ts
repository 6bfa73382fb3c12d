// An example of a plugin that speaks to the model: when a step repeats a tool call the turn already
// made with identical arguments, it leaves a short notice for the next step (logged as injected context).
import type { Plugin } from './plugin.js';

export function repeatGuardPlugin(options: { readonly threshold?: number } = {}): Plugin {
  const threshold = options.threshold ?? 2;
  return {
    name: 'repeat-guard',
    afterTools(context) {
      const calls: string[] = [];
      let current: string[] = [];
      for (const event of context.events) {
        if (event.type !== 'assistant/message' || event.turn !== context.turn) continue;
        const keys = event.toolCalls.map((c) => `${c.name} ${c.arguments}`);
        if (event.step === context.step) current = keys;
        else calls.push(...keys);
      }
      const repeated = [...new Set(current)].filter((key) => calls.filter((k) => k === key).length + 1 >= threshold);
      return repeated.map((key) => {
        const name = key.slice(0, key.indexOf(' '));
        const count = calls.filter((k) => k === key).length + 1;
        return {
          content: `You have called ${name} with identical arguments ${count} times in this turn; the result will not change. Use what you already have or try a different approach.`,
        };
      });
    },
  };
}

// What the session's steps cost per model (by the worker's pricing table, as logged with each answer), with
// the tokens behind it and the cache-read share; steps of a model the worker had no price for say so. On a
// phone each model is a block of labelled figures (the `stacks` table, styles.css).
import type { ModelCost } from '../../src/console/console-api.js';
import { grouped, NONE, percent, plural, price, usd } from './format.js';

function costText(m: ModelCost): string {
  if (m.usd === null) return m.unpricedSteps > 0 ? price(null) : NONE;
  return m.unpricedSteps > 0 ? `${usd(m.usd)} (+${plural(m.unpricedSteps, 'step')} with no price)` : usd(m.usd);
}

export function CostByModel(props: { models: readonly ModelCost[] }) {
  if (props.models.length === 0) return null;
  const priced = props.models.filter((m) => m.usd !== null);
  const total = priced.reduce((sum, m) => sum + (m.usd ?? 0), 0);
  return (
    <table class="cost-by-model stacks" aria-label="Cost by model">
      <thead>
        <tr>
          <th>Model</th>
          <th>Steps</th>
          <th title="input tokens not served from the cache">Input</th>
          <th>Cached</th>
          <th>Output</th>
          <th>Cache read</th>
          <th>Cost</th>
        </tr>
      </thead>
      <tbody>
        {props.models.map((m) => (
          <tr key={m.model}>
            <td title={m.model}>{m.model}</td>
            <td data-label="Steps">{m.steps}</td>
            <td data-label="Input" title={`${grouped(m.usage.inputUncached)} input tokens not from the cache`}>
              {grouped(m.usage.inputUncached)}
            </td>
            <td data-label="Cached" title={`${grouped(m.usage.cacheRead)} input tokens read from the cache`}>
              {grouped(m.usage.cacheRead)}
            </td>
            <td data-label="Output" title={`${grouped(m.usage.output)} output tokens`}>
              {grouped(m.usage.output)}
            </td>
            <td data-label="Cache read">
              <span class="share-bar" style={{ width: `${Math.round((m.cacheReadShare ?? 0) * 100)}%` }} />
              {percent(m.cacheReadShare)}
            </td>
            <td data-label="Cost" title={costText(m)}>
              {costText(m)}
            </td>
          </tr>
        ))}
      </tbody>
      {props.models.length > 1 && (
        <tfoot>
          <tr>
            <td>All models</td>
            <td data-label="Steps">{props.models.reduce((n, m) => n + m.steps, 0)}</td>
            <td colSpan={4} />
            <td data-label="Cost">{priced.length > 0 ? usd(total) : price(null)}</td>
          </tr>
        </tfoot>
      )}
    </table>
  );
}

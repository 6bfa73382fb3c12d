// What the session's steps cost per model (by the worker's pricing table, as logged with each answer), with
// the tokens behind it and the cache-read share; steps of a model the worker had no price for say so.
import type { ModelCost } from '../../src/console/console-api.js';
import { grouped, percent, usd } from './format.js';

function costText(m: ModelCost): string {
  if (m.usd === null) return m.unpricedSteps > 0 ? 'no price' : '–';
  return m.unpricedSteps > 0 ? `${usd(m.usd)} (+${m.unpricedSteps} unpriced)` : usd(m.usd);
}

export function CostByModel(props: { models: readonly ModelCost[] }) {
  if (props.models.length === 0) return null;
  const priced = props.models.filter((m) => m.usd !== null);
  const total = priced.reduce((sum, m) => sum + (m.usd ?? 0), 0);
  return (
    <table class="cost-by-model" aria-label="Cost by model">
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
            <td>{m.steps}</td>
            <td>{grouped(m.usage.inputUncached)}</td>
            <td>{grouped(m.usage.cacheRead)}</td>
            <td>{grouped(m.usage.output)}</td>
            <td>
              <span class="share-bar" style={{ width: `${Math.round((m.cacheReadShare ?? 0) * 100)}%` }} />
              {percent(m.cacheReadShare)}
            </td>
            <td>{costText(m)}</td>
          </tr>
        ))}
      </tbody>
      {props.models.length > 1 && (
        <tfoot>
          <tr>
            <td>All models</td>
            <td>{props.models.reduce((n, m) => n + m.steps, 0)}</td>
            <td colSpan={4} />
            <td>{priced.length > 0 ? usd(total) : '–'}</td>
          </tr>
        </tfoot>
      )}
    </table>
  );
}

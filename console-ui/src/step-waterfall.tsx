// The steps' latency waterfall: one row per step, its phases (waiting for the request to go out, the model,
// approvals, tools) as bars on one time scale shared by all rows, so a slow step or a long approval stands out.
import type { StepPhase, Timeline, TimelineStep } from '../../src/console/console-api.js';
import { duration } from './format.js';
import { stepKey, type StepRef } from './hash-route.js';

const KINDS: readonly StepPhase['kind'][] = ['wait', 'model', 'approval', 'tool'];

/** How long a step has taken: to its end, or (still running) until `now`. */
function stepSpan(s: TimelineStep, now: number): number {
  const phasesEnd = Math.max(0, ...(s.phases ?? []).map((p) => p.endMs ?? now - s.startedAt));
  const end = s.endedAt != null ? s.endedAt - s.startedAt : now - s.startedAt;
  return Math.max(phasesEnd, Number.isFinite(end) ? end : 0);
}

export function StepWaterfall(props: { timeline: Timeline; onPick: (step: StepRef) => void; now?: number }) {
  const now = props.now ?? Date.now();
  const steps = props.timeline.turns.flatMap((t) => t.steps);
  if (steps.length === 0) return null;
  // A shared scale: the longest step fills the track.
  const scale = Math.max(1, ...steps.map((s) => stepSpan(s, now)));
  const pct = (ms: number) => `${Math.min(100, (ms / scale) * 100).toFixed(3)}%`;
  return (
    <figure class="waterfall" aria-label="Step waterfall">
      <figcaption>
        Step waterfall{' '}
        <span class="legend">
          {KINDS.map((k) => (
            <span key={k} class="legend-item">
              <span class={`swatch phase-${k}`} /> {k}
            </span>
          ))}
        </span>
      </figcaption>
      <ol>
        {steps.map((s) => {
          const span = stepSpan(s, now);
          return (
            <li key={stepKey(s)} data-step={stepKey(s)}>
              <button type="button" class="link wf-label" onClick={() => props.onPick({ turn: s.turn, step: s.step })}>
                {stepKey(s)}
              </button>
              <span class="wf-track">
                {(s.phases ?? []).map((p, i) => {
                  const end = p.endMs ?? now - s.startedAt;
                  return (
                    <span
                      key={i}
                      class={`wf-bar phase-${p.kind}${p.endMs === null ? ' open' : ''}`}
                      data-kind={p.kind}
                      style={{ left: pct(p.startMs), width: `max(2px, ${pct(Math.max(0, end - p.startMs))})` }}
                      title={`${p.kind} ${p.label}: ${duration(end - p.startMs)}${p.endMs === null ? ' so far' : ''}`}
                    />
                  );
                })}
              </span>
              <span class="wf-total">{duration(span)}</span>
            </li>
          );
        })}
      </ol>
    </figure>
  );
}

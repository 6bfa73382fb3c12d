// A `dh eval` run in the console: its progress while it runs; once done, the totals, cost and latency per step
// (recorded vs candidate), and per step the two answers side by side, the diff of their tool calls, the judges,
// and the request both saw (the recorded one; the candidate differs only by the declared change). A missing
// value reads "—" and an unpriced cost "no price", as on the session page.
import { useState } from 'preact/hooks';
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from 'chart.js';
import type { EvalRunView } from '../../src/console/console-api.js';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import type { EvalStepReport } from '../../src/eval/eval-report.js';
import type { AnswerFacts } from '../../src/eval/step-diff.js';
import { apiGet, routePath } from './api-client.js';
import { clip, duration, NONE, plural, price, usd } from './format.js';
import { routeHash } from './hash-route.js';
import { StatusBadge } from './status-badge.js';
import { StepRequestView } from './step-request-view.js';
import { usePolling } from './use-polling.js';
import { useEffect, useRef } from 'preact/hooks';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip);

export function EvalView(props: { runId: string; onClose: () => void }) {
  const path = routePath(CONSOLE_ROUTES.evalRun, { runId: props.runId });
  const run = usePolling(() => apiGet<EvalRunView>(path), 2_000, path);
  const v = run.value;
  return (
    <section class="eval" role="region" aria-label={`Eval run ${props.runId}`}>
      <h2>
        Eval run {props.runId}{' '}
        <button type="button" onClick={props.onClose}>
          Close eval
        </button>
      </h2>
      {run.error !== null && <p role="alert">{run.error}</p>}
      {v === null && run.error === null && <p>Loading…</p>}
      {v !== null && v.progress !== null && (
        <p role="status">
          <StatusBadge status={v.status} /> {v.progress.done} of {plural(v.progress.total, 'step')} done (
          {v.progress.answered} answered, {v.progress.skipped} skipped, {v.progress.failed} failed),{' '}
          {usd(v.progress.spentUsd)} spent
        </p>
      )}
      {v !== null && v.report === null && v.progress === null && (
        <p role="status">
          The run is <StatusBadge status={v.status} />
        </p>
      )}
      {v?.report != null && <EvalReportView report={v.report} />}
    </section>
  );
}

function EvalReportView(props: { report: NonNullable<EvalRunView['report']> }) {
  const r = props.report;
  const [open, setOpen] = useState<number | null>(null);
  const t = r.totals;
  // A side no step of which had a price says so, rather than summing to $0.
  const pricedSource = r.steps.some((s) => s.source?.costUsd != null);
  const pricedCandidate = r.steps.some((s) => s.candidate?.costUsd != null);
  return (
    <>
      <dl class="facts" aria-label="Eval totals">
        <dt>Change</dt>
        <dd>{r.changeText}</dd>
        <dt>Steps</dt>
        <dd>
          {r.counts.answered} answered, {r.counts.skipped} skipped, {r.counts.failed} failed
        </dd>
        <dt>Requests</dt>
        <dd class={r.beyondTheChange === 0 ? 'ok' : 'bad'}>
          {r.beyondTheChange === 0
            ? 'every candidate equals its recorded request but for the change'
            : `${r.beyondTheChange} differ beyond the change`}
        </dd>
        <dt>Equal</dt>
        <dd>
          text {t.textEqual}/{t.steps}, tool calls {t.toolCallsEqual}/{t.steps}, finish reason {t.finishReasonEqual}/
          {t.steps}
        </dd>
        <dt>Cost</dt>
        <dd data-testid="eval-cost">
          {price(pricedSource ? t.costUsd.source : null)} → {price(pricedCandidate ? t.costUsd.candidate : null)}
        </dd>
        {r.judges.map((j) => (
          <>
            <dt>Judge {j.judge}</dt>
            <dd>
              mean {j.mean === null ? NONE : j.mean.toFixed(2)} over {plural(j.scored, 'step')}
              {j.errors > 0 ? `, ${j.errors} errors` : ''}
            </dd>
          </>
        ))}
      </dl>
      <EvalCharts steps={r.steps} />
      <h3>Each step</h3>
      <table class="eval-steps stacks" aria-label="Eval steps">
        <thead>
          <tr>
            <th>Session</th>
            <th>Step</th>
            <th>Status</th>
            <th>Text</th>
            <th>Tool calls</th>
            <th>Finish</th>
            <th>Judges</th>
          </tr>
        </thead>
        <tbody>
          {r.steps.map((s, i) => {
            const { sourceSessionId: id, turn, step } = s.outcome.target;
            const judges = (s.outcome.judges ?? []).map(
              (j) => `${j.judge} ${j.score === null ? 'error' : j.score.toFixed(2)}`,
            );
            return (
              <tr key={s.outcome.target.evalSessionId} class={open === i ? 'selected' : ''}>
                <td class="eval-session" title={id}>
                  <a href={routeHash({ sessionId: id, step: { turn, step } })}>{id}</a>
                </td>
                <td data-label="Step">
                  <button
                    type="button"
                    aria-expanded={open === i}
                    aria-label={`Compare ${id} step ${turn}.${step}`}
                    title="the two answers side by side"
                    onClick={() => setOpen(open === i ? null : i)}
                  >
                    {turn}.{step}
                  </button>
                </td>
                <td data-label="Status">
                  <StatusBadge status={s.outcome.status} />
                </td>
                <td data-label="Text">
                  {s.diff === null ? NONE : s.diff.textEqual ? 'equal' : `${s.diff.textSimilarity.toFixed(2)} alike`}
                </td>
                <td data-label="Tool calls">
                  {s.diff === null ? NONE : s.diff.toolCalls.map((c) => c.verdict).join(', ') || 'none'}
                </td>
                <td data-label="Finish">
                  {s.diff === null
                    ? NONE
                    : `${s.diff.finishReason.source ?? NONE} → ${s.diff.finishReason.candidate ?? NONE}`}
                </td>
                <td data-label="Judges">{judges.length > 0 ? judges.join(', ') : NONE}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {open !== null && r.steps[open] !== undefined && <EvalStepDetail step={r.steps[open]} />}
    </>
  );
}

function EvalStepDetail(props: { step: EvalStepReport }) {
  const { outcome, source, candidate, diff } = props.step;
  const [showRequest, setShowRequest] = useState(false);
  const { target } = outcome;
  return (
    <section
      class="eval-step"
      role="region"
      aria-label={`Eval of ${target.sourceSessionId} step ${target.turn}.${target.step}`}
    >
      {outcome.reason !== undefined && <p role="alert">{outcome.reason}</p>}
      <div class="side-by-side">
        <Answer title="Recorded" answer={source} />
        <Answer title="Candidate" answer={candidate} />
      </div>
      {diff !== null && diff.toolCalls.length > 0 && (
        <table class="stacks" aria-label="Tool call diff">
          <thead>
            <tr>
              <th>Call</th>
              <th>Recorded</th>
              <th>Candidate</th>
              <th>Verdict</th>
            </tr>
          </thead>
          <tbody>
            {diff.toolCalls.map((c) => (
              <tr key={c.index}>
                <td>call {c.index + 1}</td>
                <td data-label="Recorded">{c.source === null ? NONE : `${c.source.name} ${c.source.arguments}`}</td>
                <td data-label="Candidate">
                  {c.candidate === null ? NONE : `${c.candidate.name} ${c.candidate.arguments}`}
                </td>
                <td data-label="Verdict">
                  {c.verdict}
                  {c.argumentPaths.length > 0 ? ` at ${c.argumentPaths.join(', ')}` : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {(outcome.judges ?? []).map((j) => (
        <p key={j.judge}>
          Judge {j.judge}: {j.score === null ? `error: ${j.error ?? ''}` : `${j.score.toFixed(2)} — ${j.reason}`}
        </p>
      ))}
      <p>
        Candidate log: <code>{target.evalSessionId}</code>{' '}
        <button type="button" onClick={() => setShowRequest(!showRequest)}>
          {showRequest ? 'Hide the request' : 'The request both saw'}
        </button>
      </p>
      {showRequest && (
        <StepRequestView
          sessionId={target.sourceSessionId}
          turn={target.turn}
          step={target.step}
          onClose={() => setShowRequest(false)}
        />
      )}
    </section>
  );
}

function Answer(props: { title: string; answer: AnswerFacts | null }) {
  const a = props.answer;
  return (
    <figure aria-label={`${props.title} answer`}>
      <figcaption>{props.title}</figcaption>
      {a === null ? (
        <p>{NONE}</p>
      ) : (
        <>
          <pre>{a.content ?? '(no text)'}</pre>
          {a.toolCalls.length > 0 && (
            <ul>
              {a.toolCalls.map((c) => (
                <li key={c.id}>
                  <code>
                    {c.name} {c.arguments}
                  </code>
                </li>
              ))}
            </ul>
          )}
          <p class="muted">
            finish: {a.finishReason ?? NONE} ·{' '}
            {a.usage === null ? `${NONE} output tokens` : plural(a.usage.output, 'output token')} ·{' '}
            {duration(a.latencyMs)} · {price(a.costUsd)}
          </p>
        </>
      )}
    </figure>
  );
}

/** Cost and latency per step, recorded next to candidate. */
function EvalCharts(props: { steps: readonly EvalStepReport[] }) {
  const answered = props.steps.filter((s) => s.diff !== null);
  // A chart's axis has no room for a long session id: its start, then the step.
  const labels = answered.map(
    (s) => `${clip(s.outcome.target.sourceSessionId, 16)} ${s.outcome.target.turn}.${s.outcome.target.step}`,
  );
  const latency = useBarChart(
    labels,
    'latency ms',
    answered.map((s) => [s.diff?.latencyMs.source ?? null, s.diff?.latencyMs.candidate ?? null]),
  );
  const cost = useBarChart(
    labels,
    'cost USD',
    answered.map((s) => [s.diff?.costUsd.source ?? null, s.diff?.costUsd.candidate ?? null]),
  );
  if (answered.length === 0) return null;
  return (
    <div class="charts">
      <figure>
        <figcaption>Latency per step (ms)</figcaption>
        <div class="chart-box">
          <canvas ref={latency} aria-label="Latency per step" />
        </div>
      </figure>
      {/* Without a pricing table there is no cost to draw. */}
      <figure hidden={!answered.some((s) => s.diff?.costUsd.source != null || s.diff?.costUsd.candidate != null)}>
        <figcaption>Cost per step (USD)</figcaption>
        <div class="chart-box">
          <canvas ref={cost} aria-label="Cost per step" />
        </div>
      </figure>
    </div>
  );
}

function useBarChart(labels: string[], what: string, pairs: (number | null)[][]) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const data = { labels, pairs };
  useEffect(() => {
    if (canvas.current === null) return undefined;
    const chart = new Chart(canvas.current, {
      type: 'bar',
      data: {
        labels,
        datasets: [
          { label: `recorded ${what}`, data: pairs.map((p) => p[0] ?? null), backgroundColor: '#8795a8' },
          { label: `candidate ${what}`, data: pairs.map((p) => p[1] ?? null), backgroundColor: '#4c9a6a' },
        ],
      },
      options: { animation: false, responsive: true, maintainAspectRatio: false },
    });
    return () => chart.destroy();
    // Rebuilt when the numbers change; a report is small.
  }, [JSON.stringify(data)]);
  return canvas;
}

// The session's per-step charts (Chart.js, bundled): input tokens split cached / uncached as stacked bars
// with the cache-read share on a second axis, and each step's latency.
import { useEffect, useRef } from 'preact/hooks';
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from 'chart.js';
import type { Timeline } from '../../src/console/console-api.js';

Chart.register(
  BarController,
  BarElement,
  CategoryScale,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Legend,
  Tooltip,
);

function useChart(build: (canvas: HTMLCanvasElement) => Chart, data: unknown) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (canvas.current === null) return undefined;
    const chart = build(canvas.current);
    return () => chart.destroy();
    // Rebuilt when the numbers change; the timeline is small.
  }, [JSON.stringify(data)]);
  return canvas;
}

export function UsageCharts(props: { timeline: Timeline }) {
  const steps = props.timeline.turns.flatMap((t) => t.steps);
  const labels = steps.map((s) => `${s.turn}.${s.step}`);
  const cached = steps.map((s) => s.usage?.cacheRead ?? 0);
  const uncached = steps.map((s) => s.usage?.inputUncached ?? 0);
  const share = steps.map((s, i) => {
    const total = (cached[i] ?? 0) + (uncached[i] ?? 0);
    return s.usage === null || total === 0 ? null : Math.round(((cached[i] ?? 0) / total) * 100);
  });
  const latency = steps.map((s) => s.latencyMs);
  const tokens = useChart(
    (c) =>
      new Chart(c, {
        type: 'bar',
        data: {
          labels,
          datasets: [
            { type: 'bar', label: 'cached input', data: cached, stack: 'in', backgroundColor: '#4c9a6a' },
            { type: 'bar', label: 'uncached input', data: uncached, stack: 'in', backgroundColor: '#c8694a' },
            { type: 'line', label: 'cache-read share %', data: share, yAxisID: 'share', borderColor: '#345' },
          ],
        },
        options: {
          animation: false,
          maintainAspectRatio: false,
          scales: { x: { stacked: true }, y: { stacked: true }, share: { position: 'right', min: 0, max: 100 } },
        },
      }),
    [labels, cached, uncached],
  );
  const latencyChart = useChart(
    (c) =>
      new Chart(c, {
        type: 'bar',
        data: { labels, datasets: [{ label: 'step latency (ms)', data: latency, backgroundColor: '#5a7bb5' }] },
        options: { animation: false, maintainAspectRatio: false },
      }),
    [labels, latency],
  );
  return (
    <div class="charts">
      <figure>
        <div class="chart-box">
          <canvas ref={tokens} role="img" aria-label="Input tokens per step, cached and uncached" />
        </div>
      </figure>
      <figure>
        <div class="chart-box">
          <canvas ref={latencyChart} role="img" aria-label="Step latency" />
        </div>
      </figure>
    </div>
  );
}

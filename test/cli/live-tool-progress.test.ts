// A running tool's progress in `dh run` and `dh attach` (child processes) against a worker of this
// process that has a progress-reporting tool: each update is one line between the call's `→` and `←`
// lines, in order, in both viewers; `--json` prints exactly what it printed before.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { DeltaChannel } from '../../src/streaming/delta-channel.js';
import { openDeltaChannel } from '../../src/streaming/open-delta-channel.js';
import { lateLiveStream, type LateLiveStream } from '../helpers/late-live-stream.js';
import { startHarness, type Harness } from '../helpers/session-harness.js';
import { progressMessage, progressTool } from '../helpers/test-tools.js';
import { sessionIdOf, show, spawnDh, testStackEnv, type TestStackEnv } from './live-harness.js';

const line = (n: number) => `… count_up ${n}/3 ${progressMessage(n)}`;
const escaped = (text: string) => new RegExp(text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
/** The tool lines of a viewer's stderr: the call, its progress, its result. */
const toolLines = (stderr: string) => stderr.split('\n').filter((l) => /^[→…←] /.test(l));

describe('tool progress in dh run and dh attach', () => {
  let h: Harness;
  let live: LateLiveStream;
  let stack: TestStackEnv;
  let reader: DeltaChannel;
  /** What the tool awaits after each update; each test sets it. */
  let reached: (n: number) => Promise<void> = () => Promise.resolve();

  beforeAll(async () => {
    live = lateLiveStream();
    h = await startHarness({
      script: {
        mode: 'match',
        replies: [
          { match: { lastUserContains: 'count-shown' }, toolCalls: [{ id: 'p1', name: 'count_up', arguments: {} }] },
          { match: { lastUserContains: 'count-shown' }, text: 'Counted to three.' },
          { match: { lastUserContains: 'count-json' }, toolCalls: [{ id: 'p2', name: 'count_up', arguments: {} }] },
          { match: { lastUserContains: 'count-json' }, text: 'Counted again.' },
        ],
      },
      tools: [progressTool({ reached: (n) => reached(n) })],
      plugins: [live.plugin],
    });
    live.bind(h.storePath);
    reader = openDeltaChannel(h.storePath);
    // The CLI on the harness's store and task queue (its worker is the one in this process).
    stack = testStackEnv(h.provider.url, {
      DH_STORE: h.storePath,
      DH_TASK_QUEUE: h.taskQueue,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
    });
  });
  afterAll(async () => {
    await reader?.close();
    await h?.stop();
    await live?.close();
    stack?.cleanup();
  });

  it(
    'run and attach each print every update, in order, between the call and its result',
    { timeout: 120_000 },
    async () => {
      const run = spawnDh(['run', 'count-shown: count to three'], stack.env);
      try {
        const sessionId = await sessionIdOf(run);
        // A second viewer joins once the call is announced (the session exists by then).
        const attaching = run.waitFor(/→ count_up/, 60_000).then(() => spawnDh(['attach', sessionId], stack.env));
        attaching.catch(() => undefined);
        // The tool moves on only once both viewers printed its last update: none can be superseded.
        reached = async (n) => {
          await run.waitFor(escaped(line(n)), 60_000);
          await (await attaching).waitFor(escaped(line(n)), 60_000);
        };
        const r = await run.result;
        expect(r.code, show(r)).toBe(0);
        expect(r.stdout).toBe('Counted to three.\n');
        const expected = ['→ count_up {}', line(1), line(2), line(3), '← count_up ok: counted to 3 (12 chars)'];
        expect(toolLines(r.stderr), show(r)).toEqual(expected);
        // No cursor codes without a TTY.
        expect(r.stderr).not.toContain('\x1b');

        const a = await (await attaching).result;
        expect(a.code, show(a)).toBe(0);
        expect(toolLines(a.stderr), show(a)).toEqual(expected);
        expect(a.stdout).toContain('Counted to three.');
      } finally {
        reached = () => Promise.resolve();
        await run.stop();
      }
    },
  );

  it('run --json prints the same one JSON line as before, and no progress', { timeout: 120_000 }, async () => {
    const run = spawnDh(['run', '--json', 'count-json: count again'], stack.env);
    try {
      const sessionId = await sessionIdOf(run);
      // Each update reached the side channel (so there was something not to print).
      reached = async (n) => {
        const deadline = Date.now() + 60_000;
        while (!(await reader.read(sessionId, 0)).some((row) => row.kind === 'tool-progress' && row.progress === n)) {
          if (Date.now() > deadline) throw new Error(`progress ${n} never reached the side channel`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      const r = await run.result;
      expect(r.code, show(r)).toBe(0);
      const lines = r.stdout.trim().split('\n');
      expect(lines).toHaveLength(1);
      const result = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
      expect(Object.keys(result)).toEqual([
        'sessionId',
        'outcome',
        'turn',
        'reason',
        'error',
        'answer',
        'steps',
        'usage',
        'toolCalls',
      ]);
      expect(result).toMatchObject({
        sessionId,
        outcome: 'turn-ended',
        reason: 'completed',
        answer: 'Counted again.',
        steps: 2,
        toolCalls: 1,
      });
      expect(r.stdout + r.stderr).not.toContain('progress-note');
      expect(r.stderr).not.toMatch(/^… /m);
    } finally {
      reached = () => Promise.resolve();
      await run.stop();
    }
  });
});

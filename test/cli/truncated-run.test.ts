// `dh run` when the model's answer is cut at its output limit (finish_reason "length"), as a user runs it:
// a `dh worker` child with DH_MAX_TOKENS on a scripted provider whose reply stops at the limit. The turn
// ends `truncated`, run says so on stderr and exits 3 (with --json too), and the limit is in the recorded
// header and on the wire.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventOf, SessionEvent } from '../../src/core/index.js';
import type { ScriptedProvider } from '../../src/scripted-provider/start-scripted-provider.js';
import { SqliteSessionStore } from '../../src/stores/sqlite-session-store.js';
import { ExitCode } from '../../src/cli/exit-codes.js';
import { show, spawnDh, startLiveStack, TEST_MODEL, type LiveStack, type TestStackEnv } from './live-harness.js';

const CUT = 'Chapter one. It was a dark and stormy night, and the';

const ofType = <T extends SessionEvent['type']>(events: readonly SessionEvent[], type: T) =>
  events.filter((e): e is EventOf<T> => e.type === type);

describe('dh run: a length-cut answer', () => {
  let provider: ScriptedProvider;
  let stack: TestStackEnv;
  let live: LiveStack;

  beforeAll(async () => {
    live = await startLiveStack(
      {
        models: [TEST_MODEL],
        mode: 'match',
        replies: [{ match: { lastUserContains: 'long-story' }, text: CUT, finishReason: 'length', repeat: 2 }],
      },
      { DH_MAX_TOKENS: '333' },
    );
    ({ provider, stack } = live);
  });

  afterAll(() => live?.stop());

  it('ends the turn truncated: the cut answer on stdout, the reason on stderr, exit 3', async () => {
    const r = await spawnDh(['run', 'long-story: tell me a very long story'], stack.env).result;
    expect(r.code, show(r)).toBe(ExitCode.TurnNotCompleted);
    expect(r.stdout).toBe(`${CUT}\n`);
    expect(r.stderr, show(r)).toMatch(
      /turn 1 ended: truncated — ANSWER_TRUNCATED: the answer stopped at its output limit/,
    );
    const sessionId = /dh: session (\S+) /.exec(r.stderr)?.[1] as string;

    // DH_MAX_TOKENS is in the header the log records, and on the wire the provider received.
    const store = SqliteSessionStore.open(join(stack.home, 'sessions.db'));
    try {
      const events = await store.read(sessionId);
      expect(ofType(events, 'request/header').map((e) => e.header.config.maxTokens)).toEqual([333]);
      expect(ofType(events, 'turn/end').map((e) => e.reason)).toEqual(['truncated']);
    } finally {
      await store.close();
    }
    const bodies = provider
      .requests()
      .filter((q) => q.path.endsWith('/chat/completions') && q.body.includes('long-story'))
      .map((q) => JSON.parse(q.body) as { max_tokens?: number });
    expect(bodies.map((b) => b.max_tokens)).toEqual([333]);
  });

  it('--json reports the reason and exits 3 as well', async () => {
    const r = await spawnDh(['run', '--json', 'long-story: another one'], stack.env).result;
    expect(r.code, show(r)).toBe(ExitCode.TurnNotCompleted);
    const result = JSON.parse(r.stdout.trim().split('\n').at(-1) ?? '{}') as { reason?: string };
    expect(result.reason, show(r)).toBe('truncated');
  });
});

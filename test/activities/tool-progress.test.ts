// The tool progress reporter's throttle: the first update passes at once, later ones at most once per
// interval with the latest winning, nothing after the call ended, and bad updates or a throwing observer
// never reach the tool.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  checkedProgress,
  MAX_PROGRESS_MESSAGE_CHARS,
  TOOL_PROGRESS_INTERVAL_MS,
  toolProgressReporter,
} from '../../src/activities/tool-progress.js';
import type { ToolProgress } from '../../src/plugins/contracts.js';

describe('toolProgressReporter', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function reporter() {
    const passed: string[] = [];
    const r = toolProgressReporter((u) =>
      passed.push(`${u.progress}${u.message !== undefined ? ` ${u.message}` : ''}`),
    );
    return { passed, ...r };
  }

  it('passes the first update at once and at most one per interval after it, the latest one winning', () => {
    const { passed, progress } = reporter();
    expect(TOOL_PROGRESS_INTERVAL_MS).toBe(250);
    progress({ progress: 1 });
    expect(passed).toEqual(['1']);
    // A burst inside the interval: only its last update passes, when the interval ends.
    for (let i = 2; i <= 50; i++) progress({ progress: i, message: `item ${i}` });
    expect(passed).toEqual(['1']);
    vi.advanceTimersByTime(TOOL_PROGRESS_INTERVAL_MS - 1);
    expect(passed).toEqual(['1']);
    vi.advanceTimersByTime(1);
    expect(passed).toEqual(['1', '50 item 50']);
    // The next one, right after: it waits for the interval since the last one passed.
    progress({ progress: 51 });
    vi.advanceTimersByTime(TOOL_PROGRESS_INTERVAL_MS / 2);
    expect(passed).toEqual(['1', '50 item 50']);
    vi.advanceTimersByTime(TOOL_PROGRESS_INTERVAL_MS / 2);
    expect(passed).toEqual(['1', '50 item 50', '51']);
    // After a quiet spell an update passes at once again.
    vi.advanceTimersByTime(TOOL_PROGRESS_INTERVAL_MS * 4);
    progress({ progress: 52 });
    expect(passed).toEqual(['1', '50 item 50', '51', '52']);
  });

  it('keeps updates spaced wider than the interval, each at once', () => {
    const { passed, progress } = reporter();
    for (let i = 1; i <= 3; i++) {
      progress({ progress: i, total: 3, message: `part ${i}` });
      expect(passed).toHaveLength(i);
      vi.advanceTimersByTime(TOOL_PROGRESS_INTERVAL_MS + 10);
    }
    expect(passed).toEqual(['1 part 1', '2 part 2', '3 part 3']);
  });

  it('lets one update per interval through from a tool reporting every millisecond', () => {
    const { passed, progress } = reporter();
    for (let ms = 0; ms < 1000; ms++) {
      progress({ progress: ms });
      vi.advanceTimersByTime(1);
    }
    // One at once, then one per interval: each the latest the tool had reported when it passed (the
    // last one too: it is not lost to the throttle).
    expect(passed).toEqual(['0', '249', '499', '749', '999']);
  });

  it('drops a waiting update when the call ends, and ignores updates after it', () => {
    const { passed, progress, close } = reporter();
    progress({ progress: 1 });
    progress({ progress: 2 });
    close();
    progress({ progress: 3 });
    vi.advanceTimersByTime(TOOL_PROGRESS_INTERVAL_MS * 4);
    expect(passed).toEqual(['1']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never throws into the tool: bad updates are dropped, a throwing observer is contained', () => {
    const seen: ToolProgress[] = [];
    const { progress } = toolProgressReporter((u) => {
      seen.push(u);
      throw new Error('the channel is down');
    });
    expect(() => progress({ progress: 1 })).not.toThrow();
    vi.advanceTimersByTime(TOOL_PROGRESS_INTERVAL_MS);
    expect(() => progress({ progress: Number.NaN })).not.toThrow();
    expect(() => progress(null as unknown as ToolProgress)).not.toThrow();
    expect(() => progress({ progress: '2' } as unknown as ToolProgress)).not.toThrow();
    expect(seen).toEqual([{ progress: 1 }]);
  });
});

describe('checkedProgress', () => {
  it('keeps finite numbers and a non-empty message (cut to its cap), drops the rest', () => {
    expect(checkedProgress({ progress: 2, total: 5, message: 'two' })).toEqual({
      progress: 2,
      total: 5,
      message: 'two',
    });
    expect(checkedProgress({ progress: 0.5, total: Number.POSITIVE_INFINITY, message: '' })).toEqual({ progress: 0.5 });
    expect(checkedProgress({ progress: 1, total: '3', message: 7 })).toEqual({ progress: 1 });
    expect(checkedProgress({ progress: Number.NaN })).toBeNull();
    expect(checkedProgress({})).toBeNull();
    expect(checkedProgress(undefined)).toBeNull();
    const long = checkedProgress({ progress: 1, message: 'x'.repeat(MAX_PROGRESS_MESSAGE_CHARS + 10) });
    expect(long?.message).toHaveLength(MAX_PROGRESS_MESSAGE_CHARS);
  });
});

// The watchdog's notion of progress: SSE data lines are progress, comments and blank lines are not,
// whatever the chunk boundaries.
import { describe, expect, it } from 'vitest';
import { SseProgressScanner } from '../../src/providers/guarded-fetch.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('SseProgressScanner', () => {
  it('counts keep-alive comments and blank lines as no progress', () => {
    const scanner = new SseProgressScanner();
    expect(scanner.push(bytes(': keep-alive\n\n'))).toBe(false);
    expect(scanner.push(bytes(': keep-alive\r\n\r\n'))).toBe(false);
    expect(scanner.push(bytes('\n\n\n'))).toBe(false);
    expect(scanner.commentLines).toBe(2);
    expect(scanner.dataLines).toBe(0);
  });

  it('counts data lines as progress, also when split across chunks', () => {
    const scanner = new SseProgressScanner();
    expect(scanner.push(bytes('da'))).toBe(false);
    expect(scanner.push(bytes('ta: {"choices":'))).toBe(true);
    expect(scanner.push(bytes('[]}'))).toBe(true);
    expect(scanner.push(bytes('\n\n: keep-alive\n\ndata: [DONE]\n\n'))).toBe(true);
    expect(scanner.dataLines).toBe(2);
    expect(scanner.commentLines).toBe(1);
  });

  it('does not count other fields as progress', () => {
    const scanner = new SseProgressScanner();
    expect(scanner.push(bytes('event: ping\nid: 7\nretry: 100\n\n'))).toBe(false);
    expect(scanner.push(bytes('dat\n'))).toBe(false);
  });
});

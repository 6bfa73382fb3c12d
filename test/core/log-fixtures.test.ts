// Committed logs, one per format version, must keep loading and keep deriving the same surface:
// sessions live for weeks, and a projection change would silently change what running sessions send.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { digestOf, Session, SESSION_FORMAT_VERSION } from '../../src/core/index.js';

const dir = 'test/fixtures/logs';
const fixtures = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));

describe('log fixtures', () => {
  it('there is a fixture for the current format version', () => {
    expect(fixtures).toContain(`v${SESSION_FORMAT_VERSION}.jsonl`);
  });

  it.each(fixtures)('%s loads and derives what it derived when recorded', (file) => {
    const events = readFileSync(`${dir}/${file}`, 'utf8')
      .split('\n')
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as unknown);
    const first = events[0] as { sessionId: string };
    const session = new Session(first.sessionId, events);
    const expected = JSON.parse(readFileSync(`${dir}/${file.replace('.jsonl', '.expected.json')}`, 'utf8')) as unknown;
    expect({
      head: session.head,
      surface: digestOf(session.deriveMessages()),
      header: digestOf(session.requestHeader() ?? null),
      replaceGeneration: session.replaceGeneration,
    }).toEqual(expected);
  });
});

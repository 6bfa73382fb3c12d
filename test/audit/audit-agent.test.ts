// The audit's agent check on logs built with the core: a format-2 log whose headers name its agent and apply
// its overrides passes; a header that names another agent, misses the overrides in force or ignores them fails.
import { describe, expect, it } from 'vitest';
import { auditAgent } from '../../src/audit/audit-agent.js';
import { Session, type EventDraft, type RequestHeader } from '../../src/core/index.js';

const AGENT = { name: 'support', version: '0123456789ab' };
const at = 1_700_000_000_000;

function log(...drafts: EventDraft[]) {
  const session = new Session('audit-agent');
  session.append({ type: 'session/start', at, sessionId: 'audit-agent', formatVersion: 2, agent: AGENT }, ...drafts);
  return session.events;
}

function step(turn: number, header: RequestHeader): EventDraft[] {
  return [
    ...(turn === 1
      ? [
          {
            type: 'inbox/enqueue',
            at,
            messageId: 'm1',
            target: 'next-turn',
            wakeup: true,
            origin: 'followup',
            content: 'hi',
          } as const,
        ]
      : []),
    { type: 'turn/start', at, turn },
    ...(turn === 1 ? [{ type: 'inbox/claim' as const, at, turn, step: 1, messageIds: ['m1'] }] : []),
    { type: 'step/start', at, turn, step: 1 },
    { type: 'request/header', at, reason: turn === 1 ? 'initial' : 'change', turn, step: 1, header },
  ];
}

const header = (extra: Partial<RequestHeader> = {}): RequestHeader => ({
  config: { provider: 'scripted', model: 'small' },
  system: 'You are support.',
  tools: [
    { name: 'lookup', description: 'd', parameters: {} },
    { name: 'refund', description: 'd', parameters: {} },
  ],
  agent: AGENT,
  ...extra,
});

describe('the audit of a log’s agent', () => {
  it('names none for a format-1 log', () => {
    const session = new Session('v1');
    session.append({ type: 'session/start', at, sessionId: 'v1', formatVersion: 1 });
    expect(auditAgent(session.events)).toBeNull();
  });

  it('passes headers that name the agent and apply the overrides in force', () => {
    const events = log(...step(1, header()), {
      type: 'agent/overrides',
      at,
      overridesId: 'o1',
      overrides: { model: 'large', tools: ['lookup'], systemAppend: 'Be brief.' },
    });
    const session = new Session('audit-agent', events);
    session.append(
      { type: 'step/end', at, turn: 1, step: 1 },
      { type: 'turn/end', at, turn: 1, reason: 'error' },
      ...step(2, {
        ...header(),
        config: { provider: 'scripted', model: 'large' },
        system: 'You are support.\n\nBe brief.',
        tools: [{ name: 'lookup', description: 'd', parameters: {} }],
        agent: { ...AGENT, overrides: 'o1' },
      }),
    );
    expect(auditAgent(session.events)).toEqual({
      name: 'support',
      versions: [AGENT.version],
      overrides: 1,
      problems: [],
    });
  });

  it('finds a header of another agent, one that misses the overrides, and one that ignores them', () => {
    const events = log(...step(1, header({ agent: { name: 'triage', version: AGENT.version } })), {
      type: 'agent/overrides',
      at,
      overridesId: 'o1',
      overrides: { model: 'large', tools: ['lookup'] },
    });
    const session = new Session('audit-agent', events);
    session.append(
      { type: 'step/end', at, turn: 1, step: 1 },
      { type: 'turn/end', at, turn: 1, reason: 'error' },
      ...step(2, header({ agent: { ...AGENT, overrides: 'o1' } })),
    );
    const problems = auditAgent(session.events)?.problems ?? [];
    expect(problems).toEqual([
      'header 1.1 (seq 5): agent "triage", the session runs "support"',
      'header 2.1 (seq 11): model small, the overrides say large',
      "header 2.1 (seq 11): offers refund, beyond the overrides' tools",
    ]);
  });
});

// A reload in the middle of a streaming answer, in Debian's chromium on the built console: the page keeps
// the live text and its stream position in sessionStorage and resumes the live stream with Last-Event-ID,
// so the text continues with no gap and nothing repeated, with the step's token counts and cost, drawn in place
// as the last message of the conversation, and the timeline then shows the answer exactly as logged. Real
// Temporal, worker, SQLite and scripted provider.
import { mkdtempSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followupSignal } from '../../src/shared/session-messages.js';
import { lateLiveStream, type LateLiveStream } from '../helpers/late-live-stream.js';
import { startHarness, TEST_MODEL, waitForState, waitForTurnEnd, type Harness } from '../helpers/session-harness.js';
import { launchChromium, recordBrowserLog, screenshot } from './console-browser.js';
import { startConsoleUnderTest, type ConsoleUnderTest } from './console-under-test.js';

// 250 distinct words of 5 characters, one per chunk: a repeated or skipped stretch can never look like a prefix.
const ANSWER = Array.from({ length: 250 }, (_, i) => `w${String(i + 1).padStart(3, '0')}`).join(' ');
// Dear on purpose, so the streaming step's cost shows in the first digits.
const PRICE = { inputPerMillion: 1_000, cachedInputPerMillion: 100, outputPerMillion: 2_000 };
const SESSION = 'ui-resume';
const STREAMING = 'Streaming answer of turn 1 step 1';

// Code run in the page: this project's TypeScript has no DOM types, so the page's globals are declared loosely.
declare const Node: any;
const DROPPED = 'ui-dropped';

/**
 * A TCP relay in front of the console whose `drop()` cuts every open connection, as a network failure would.
 * It names the console's own address in the Host header, which the console checks (DNS rebinding).
 */
async function startRelay(target: string): Promise<{ url: string; drop(): void; close(): Promise<void> }> {
  const { host, hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  };
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    track(client);
    track(upstream);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('end', () => upstream.end());
    // Requests here are header-only GETs of one packet each; latin1 keeps every byte as it was.
    client.on('data', (chunk: Buffer) =>
      upstream.write(Buffer.from(chunk.toString('latin1').replace(/^host: .*$/im, `Host: ${host}`), 'latin1')),
    );
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const drop = () => {
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    drop,
    close: () => {
      drop();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('a reload while an answer streams in the web console', () => {
  let h: Harness;
  let live: LateLiveStream;
  let ui: ConsoleUnderTest;
  let relay: Awaited<ReturnType<typeof startRelay>>;
  let browser: Browser;
  let page: Page;
  const browserLog = join(mkdtempSync(join(tmpdir(), 'dh-console-resume-')), 'browser.log');
  let errors: string[] = [];
  const liveRequests: { session: string; lastEventId: string | undefined }[] = [];

  beforeAll(async () => {
    // The worker publishes its stream deltas to the store's side channel, as `dh run` does.
    live = lateLiveStream();
    h = await startHarness({
      script: { replies: [{ text: ANSWER, chunkSize: 5, chunkDelayMs: 35, usageEveryChunk: true, repeat: 2 }] },
      fleet: { pricing: { [`scripted/${TEST_MODEL}`]: PRICE } },
      plugins: [live.plugin],
    });
    live.bind(h.storePath);
    ui = await startConsoleUnderTest(h);
    relay = await startRelay(ui.url);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    errors = recordBrowserLog(page, browserLog);
    page.on('request', (r) => {
      const live = /\/api\/sessions\/([^/]+)\/live$/.exec(new URL(r.url()).pathname);
      if (live?.[1] !== undefined) liveRequests.push({ session: live[1], lastEventId: r.headers()['last-event-id'] });
    });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await relay?.close();
    await ui?.stop();
    await h?.stop();
    await live?.close();
  });

  /** The streaming answer's text now, or null when the page shows none (no step streaming, or not open yet). */
  const liveText = async () => (await page.getByTestId('live-text').allTextContents())[0] ?? null;

  /** Samples the live text until the logged answer takes its place (the streaming answer goes). */
  async function sampleUntilLogged(): Promise<string[]> {
    const samples: string[] = [];
    const deadline = Date.now() + 60_000;
    for (;;) {
      const text = await liveText();
      if (text !== null) samples.push(text);
      else if (samples.length > 0) return samples;
      if (Date.now() > deadline) throw new Error(`the live text never ended; ${samples.length} samples`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Every sample is the answer so far: nothing skipped, nothing shown twice, never shrinking, and it grew. */
  function expectGrowingPrefixes(samples: readonly string[], before: string): void {
    for (const [i, sample] of samples.entries()) {
      expect(ANSWER.startsWith(sample), `sample ${i} is not a prefix of the answer: …${sample.slice(-40)}`).toBe(true);
      expect(sample.length).toBeGreaterThanOrEqual(samples[i - 1]?.length ?? before.length);
    }
    expect((samples.at(-1) ?? '').length).toBeGreaterThan((samples[0] ?? '').length);
    expect(new Set(samples).size).toBeGreaterThan(2);
  }

  /** Opens the session and waits until part of its answer and its token counts show live. */
  async function openStreaming(sessionId: string): Promise<string> {
    await page.getByRole('link', { name: sessionId, exact: true }).click();
    const session = page.getByRole('region', { name: `Session ${sessionId}` });
    const liveSection = session.getByRole('region', { name: STREAMING });
    await expect.poll(async () => (await liveText())?.length ?? 0, { timeout: 20_000 }).toBeGreaterThan(100);
    // The streaming step's counts and cost so far, from the usage the provider sends with every chunk.
    await expect
      .poll(() => liveSection.getByTestId('live-usage').textContent(), { timeout: 10_000 })
      .toMatch(/^\d[\d,]* tokens · \$\d+\.\d{4}$/);
    // In place: inside the streaming step's card, after the message that asked, the conversation's last message.
    const step = session.getByRole('article', { name: 'Turn 1 step 1' });
    expect(await step.getByRole('region', { name: STREAMING }).count()).toBe(1);
    const after = await step
      .getByTestId('user-message')
      .evaluate(
        (asked: any, live: any) => (asked.compareDocumentPosition(live) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0,
        await liveSection.elementHandle(),
      );
    expect(after).toBe(true);
    const messages = session.locator('.conversation .msg');
    expect(await messages.last().getAttribute('data-testid')).toBe('live-answer');
    const before = (await liveText()) ?? '';
    expect(ANSWER.startsWith(before)).toBe(true);
    expect(before.length).toBeLessThan(ANSWER.length / 2); // well before the end
    return before;
  }

  /** The turn's logged answer is the script's, and the timeline shows it whole. */
  async function expectLoggedAnswerShown(sessionId: string): Promise<void> {
    const events = await waitForTurnEnd(h.store, sessionId, 1);
    const logged = events.find((e) => e.type === 'assistant/message');
    expect(logged?.type === 'assistant/message' ? logged.content : null).toBe(ANSWER);
    const session = page.getByRole('region', { name: `Session ${sessionId}` });
    // The answer has no markdown in it: its rendering is its text, exactly.
    const answer = session.getByRole('article', { name: 'Turn 1 step 1' }).getByTestId('answer-markdown');
    await expect.poll(() => answer.textContent(), { timeout: 10_000 }).toBe(ANSWER);
    expect(await session.getByRole('region', { name: STREAMING }).count()).toBe(0);
  }

  it('continues the live text after a reload without a gap or a repeat, then shows the answer as logged', async () => {
    const handle = await h.start(SESSION);
    await handle.signal(followupSignal, { content: 'stream a long answer' });
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);

    await page.goto(ui.url);
    const before = await openStreaming(SESSION);
    await screenshot(page, 'console-live-before-reload');
    const requestsBefore = liveRequests.length;
    // The open session is in the address: the reload opens it again by itself.
    expect(new URL(page.url()).hash).toBe(`#/sessions/${SESSION}`);
    await page.reload();
    const samples = await sampleUntilLogged();

    // The first connection started from the beginning; the one after the reload from where the page was.
    expect(liveRequests[0]).toEqual({ session: SESSION, lastEventId: undefined });
    expect(liveRequests[requestsBefore]?.lastEventId).toMatch(/^\d+:\d+$/);
    expectGrowingPrefixes(samples, before);
    await expectLoggedAnswerShown(SESSION);
    await screenshot(page, 'console-live-after-reload');
    expect(errors).toEqual([]);
  }, 120_000);

  it('reconnects by itself when the connection drops, from the last message it had', async () => {
    const handle = await h.start(DROPPED);
    await handle.signal(followupSignal, { content: 'stream it again' });
    await waitForState(handle, (s) => s.status === 'running' && s.step === 1);
    await page.goto(relay.url);
    const before = await openStreaming(DROPPED);
    const requestsBefore = liveRequests.length;
    // The connection drops mid-stream: the page reconnects (after a backoff) from the last message it had.
    relay.drop();
    const samples = await sampleUntilLogged();

    const again = liveRequests.slice(requestsBefore).filter((r) => r.session === DROPPED);
    expect(again.length).toBeGreaterThan(0);
    expect(again.every((r) => /^\d+:\d+$/.test(r.lastEventId ?? ''))).toBe(true);
    expectGrowingPrefixes(samples, before);
    await expectLoggedAnswerShown(DROPPED);
    // Only the cut connections themselves, as the browser reports them.
    expect(errors.filter((e) => !e.includes('net::ERR_'))).toEqual([]);
  }, 120_000);
});

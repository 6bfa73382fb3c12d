// Writes the committed log fixture for the current format version (test/fixtures/logs/v<N>.jsonl).
// Run only when a new format version is introduced; fixtures of older versions are never rewritten.
import { existsSync, writeFileSync } from 'node:fs';
import { digestOf, SESSION_FORMAT_VERSION } from '../src/core/index.js';
import { LogDriver } from '../test/helpers/log-generator.js';

const path = `test/fixtures/logs/v${SESSION_FORMAT_VERSION}.jsonl`;
if (existsSync(path) && !process.argv.includes('--force')) {
  console.error(`${path} exists; fixtures of a released format are immutable (pass --force only before release)`);
  process.exit(1);
}
// Format 2 names the agent (in the start and every header) and logs a session's overrides of it.
const driver = new LogDriver(`fixture-v${SESSION_FORMAT_VERSION}`, {
  agent: { name: 'support', version: '0123456789ab' },
}).run([
  { kind: 'send', origin: 'followup', text: 'List the files and read one.' },
  { kind: 'step', toolCalls: 2, text: 'Looking.', changeHeader: false, skipLastTool: true },
  { kind: 'send', origin: 'steer', text: 'Prefer YAML.' },
  { kind: 'send', origin: 'inject', text: 'The branch is main.' },
  { kind: 'step', toolCalls: 0, text: 'Done.', changeHeader: false, skipLastTool: false },
  { kind: 'end-turn' },
  { kind: 'replace', from: 0, length: 2 },
  { kind: 'overrides', overrides: { model: 'other-model', systemAppend: 'Answer in French.' } },
  { kind: 'send', origin: 'followup', text: 'Again, shorter.' },
  { kind: 'step', toolCalls: 1, text: 'Ok.', changeHeader: true, skipLastTool: false },
  { kind: 'prune', pick: 0 },
  { kind: 'end-turn' },
]);
writeFileSync(path, driver.session.events.map((e) => JSON.stringify(e)).join('\n') + '\n');
// What test/core/log-fixtures.test.ts holds it to, from now on.
const { session } = driver;
const expected = {
  head: session.head,
  surface: digestOf(session.deriveMessages()),
  header: digestOf(session.requestHeader() ?? null),
  replaceGeneration: session.replaceGeneration,
};
writeFileSync(path.replace('.jsonl', '.expected.json'), JSON.stringify(expected, null, 2) + '\n');
console.log(`wrote ${driver.session.head} events to ${path}`);

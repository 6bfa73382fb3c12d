// Writes the committed log fixture for the current format version (test/fixtures/logs/v<N>.jsonl).
// Run only when a new format version is introduced; fixtures of older versions are never rewritten.
import { existsSync, writeFileSync } from 'node:fs';
import { SESSION_FORMAT_VERSION } from '../src/core/index.js';
import { LogDriver } from '../test/helpers/log-generator.js';

const path = `test/fixtures/logs/v${SESSION_FORMAT_VERSION}.jsonl`;
if (existsSync(path) && !process.argv.includes('--force')) {
  console.error(`${path} exists; fixtures of a released format are immutable (pass --force only before release)`);
  process.exit(1);
}
const driver = new LogDriver('fixture-v1').run([
  { kind: 'send', origin: 'followup', text: 'List the files and read one.' },
  { kind: 'step', toolCalls: 2, text: 'Looking.', changeHeader: false, skipLastTool: true },
  { kind: 'send', origin: 'steer', text: 'Prefer YAML.' },
  { kind: 'send', origin: 'inject', text: 'The branch is main.' },
  { kind: 'step', toolCalls: 0, text: 'Done.', changeHeader: false, skipLastTool: false },
  { kind: 'end-turn' },
  { kind: 'replace', from: 0, length: 2 },
  { kind: 'send', origin: 'followup', text: 'Again, shorter.' },
  { kind: 'step', toolCalls: 1, text: 'Ok.', changeHeader: true, skipLastTool: false },
  { kind: 'prune', pick: 0 },
  { kind: 'end-turn' },
]);
writeFileSync(path, driver.session.events.map((e) => JSON.stringify(e)).join('\n') + '\n');
console.log(`wrote ${driver.session.head} events to ${path}`);

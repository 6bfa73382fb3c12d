// `npm run schemas`: writes the JSON Schema of every signal and update payload of the session workflow
// to schemas/*.json, generated from the zod schemas (test/cli/live-schemas.test.ts keeps them in sync).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { z } from 'zod';
import {
  ApprovePayload,
  CloseSignalPayload,
  InterruptSignalPayload,
  MAX_CONTENT_PARTS,
  MAX_MESSAGE_CHARS,
  MessageSignalPayload,
  SendUpdatePayload,
} from '../src/shared/session-messages.js';

export const SCHEMAS_DIR = fileURLToPath(new URL('../schemas/', import.meta.url));

const CONTENT_LIMIT =
  `\`content\` is at most ${MAX_MESSAGE_CHARS} characters of content (UTF-16 code units: a string's length, or the ` +
  `text parts' texts and image parts' names together) and at most ${MAX_CONTENT_PARTS} parts.`;

const MESSAGES: ReadonlyArray<{ file: string; schema: z.ZodType; description: string }> = [
  {
    file: 'followup.signal.json',
    schema: MessageSignalPayload,
    description: `Signal \`followup\`: queued for the next turn (one per turn); wakes the session. ${CONTENT_LIMIT}`,
  },
  {
    file: 'steer.signal.json',
    schema: MessageSignalPayload,
    description: `Signal \`steer\`: queued for the next step of the running turn (starts a turn when idle). ${CONTENT_LIMIT}`,
  },
  {
    file: 'inject.signal.json',
    schema: MessageSignalPayload,
    description: `Signal \`inject\`: rides along with the next step; never starts a turn. ${CONTENT_LIMIT}`,
  },
  {
    file: 'interrupt.signal.json',
    schema: InterruptSignalPayload,
    description: 'Signal `interrupt`: stops the running step. The payload may be omitted.',
  },
  {
    file: 'close.signal.json',
    schema: CloseSignalPayload,
    description:
      'Signal `close`: accepted messages still run, new ones are refused, then the workflow completes. The payload may be omitted.',
  },
  {
    file: 'send.update.json',
    schema: SendUpdatePayload,
    description: `Update \`send\`: the general form behind followup / steer / inject; returns {messageId, position, target, duplicate, downgraded}. ${CONTENT_LIMIT}`,
  },
  {
    file: 'approve.update.json',
    schema: ApprovePayload,
    description:
      'Update `approve`: the decision on the tool call waiting for approval, named by its id or its short id ' +
      "(`state`'s pendingApproval has both); returns {callId, decision}.",
  },
];

/** File name → the JSON text to write, formatted as `npm run format` would (same input, same bytes). */
export async function messageSchemaFiles(): Promise<Map<string, string>> {
  const options = { ...(await resolveConfig(join(SCHEMAS_DIR, 'x.json'))), parser: 'json' };
  const files = new Map<string, string>();
  for (const { file, schema, description } of MESSAGES) {
    const generated = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
    const { $schema, ...rest } = generated;
    const document = {
      $schema,
      title: file.replace(/\.json$/, ''),
      description,
      ...rest,
    };
    files.set(file, await format(JSON.stringify(document, null, 2), options));
  }
  return files;
}

export async function writeMessageSchemas(dir = SCHEMAS_DIR): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const [file, text] of await messageSchemaFiles()) {
    writeFileSync(join(dir, file), text);
    written.push(file);
  }
  return written;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const file of await writeMessageSchemas()) process.stdout.write(`schemas/${file}\n`);
}

// A sender child process of the chaos harness and the concurrency test: connects its own Temporal
// client and sends a list of messages through SessionClient, in order, each retried until accepted.
// Prints one JSON line per accepted message (an AckedMessage), then `done`.
// Usage: node --import tsx test/helpers/chaos/send-messages.ts '<SenderConfig json>'
import { Client, Connection } from '@temporalio/client';
import { SessionClient } from '../../../src/client/session-client.js';
import { sessionWorkflowId } from '../../../src/shared/session-messages.js';
import { sendThroughCli, sendThroughClient, sleep, untilSent, type SenderConfig } from './chaos-messages.js';

const raw = process.argv[2];
if (raw === undefined) throw new Error('send-messages: pass the SenderConfig as JSON in the first argument');
const config = JSON.parse(raw) as SenderConfig;
// The server may be down right now (a chaos kill): connecting is retried like a send.
let connection: Connection | undefined;
await untilSent(async () => {
  connection = await Connection.connect({ address: config.address, connectTimeout: 2_000 });
});
if (connection === undefined) throw new Error('send-messages: no connection');
try {
  const sessions = new SessionClient(new Client({ connection, namespace: config.namespace }), {
    taskQueue: config.taskQueue,
  });
  const via = `child:${process.pid}`;
  for (const message of config.messages) {
    if (message.delayMs) await sleep(message.delayMs);
    const acked =
      message.through === 'cli' && config.cliPath !== undefined
        ? await sendThroughCli(
            {
              cliPath: config.cliPath,
              address: config.address,
              namespace: config.namespace,
              workflowId: sessionWorkflowId(config.sessionId),
            },
            message,
          )
        : await sendThroughClient(sessions, config.sessionId, message, {
            via,
            ...(config.source !== undefined ? { source: config.source } : {}),
          });
    process.stdout.write(`${JSON.stringify(acked)}\n`);
  }
  process.stdout.write('done\n');
} finally {
  await connection.close();
}
process.exit(0);

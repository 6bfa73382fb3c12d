// A worker process: `npx tsx worker.ts` runs one against TEMPORAL_ADDRESS until SIGINT/SIGTERM. The
// composition root is src/worker/start-worker.ts; the default plugins are src/worker/default-plugins.ts.
import { runWorker } from './src/worker/start-worker.js';

export { defaultPlugins } from './src/worker/default-plugins.js';
export { runWorker, startWorker } from './src/worker/start-worker.js';

if (import.meta.url === `file://${process.argv[1]}`) {
  runWorker().catch((error: unknown) => {
    console.error(`worker: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  });
}

#!/usr/bin/env node
// Entry point of the `dh` command: runs the TypeScript sources through tsx so a fresh clone needs no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv.slice(2)).catch((error) => {
  const code = error && typeof error === 'object' && 'code' in error ? ` [${String(error.code)}]` : '';
  console.error(`dh: ${error instanceof Error ? error.message : String(error)}${code}`);
  process.exitCode = process.exitCode || 1;
});

// Starts the real services the suite needs, once per run, and hands their addresses to the tests.
import type { TestProject } from 'vitest/node';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const teardowns: Array<() => Promise<void>> = [];
  // PostgreSQL: see test/setup/postgres.ts (installed and started here when none is configured).
  const { startPostgres } = await import('./postgres.js');
  const pg = await startPostgres();
  project.provide('postgresUrl', pg.url);
  teardowns.push(pg.stop);
  return async () => {
    for (const teardown of teardowns.reverse()) await teardown();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
  }
}

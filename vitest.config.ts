// Test configuration: one global setup starts the real services (PostgreSQL; later Temporal) once per
// run; the forks pool because Temporal's native bridge does not mix with worker threads.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    globalSetup: ['test/setup/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});

// Test configuration: three projects by what their files need (test/projects.ts says which file is where and
// why). `unit` has no global setup; `stack` and `system` provision theirs, a dependency both need once per run.
// The forks pool because Temporal's native bridge does not mix with worker threads; one pool for all projects,
// so the run's parallelism is vitest's default, as before the split.
import { defineConfig } from 'vitest/config';
import { TEST_PROJECT_NAMES, TEST_PROJECTS } from './test/projects.js';

export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 120_000,
    projects: TEST_PROJECT_NAMES.map((name) => {
      const { files, globalSetup } = TEST_PROJECTS[name];
      return {
        extends: true,
        test: {
          name,
          include: [...files],
          ...(globalSetup === undefined ? {} : { globalSetup: [globalSetup] }),
          // unit files start nothing and restore what they change, so they share one process (loading the
          // sources once instead of per file): seconds instead of minutes.
          ...(name === 'unit' ? { isolate: false } : {}),
        },
      };
    }),
  },
});

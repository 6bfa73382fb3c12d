// Lint rules: type-aware checks everywhere, and an import fence around code that runs in the
// Temporal workflow sandbox (src/core, src/shared, src/workflows), which must stay deterministic.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const SANDBOX_FORBIDDEN = [
  {
    group: [
      'node:*',
      'fs',
      'fs/*',
      'path',
      'os',
      'crypto',
      'child_process',
      'http',
      'https',
      'net',
      'url',
      'util',
      'events',
      'stream',
      'worker_threads',
      'timers',
    ],
    message: 'Workflow-side code must not use Node built-ins (not deterministic, not in the sandbox).',
  },
  { group: ['openai', 'openai/*'], message: 'Provider SDKs run in activities only.' },
  { group: ['better-sqlite3', 'pg', 'pg-*'], message: 'Database drivers run in activities only.' },
  {
    group: ['@temporalio/worker', '@temporalio/client', '@temporalio/activity'],
    message: 'Not available in the workflow sandbox.',
  },
  {
    group: ['**/activities/*', '**/providers/*', '**/stores/*', '**/plugins/*', '**/cli/*', '**/scripted-provider/*'],
    allowTypeImports: true,
    message: 'Workflow-side code may only import types from Node-side folders.',
  },
];

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      'node_modules/**',
      'coverage/**',
      'bin/**',
      'eslint.config.js',
      '.tmp/**',
      // A project of its own against the installed package (its tsconfig, its node_modules): type-aware rules
      // here would see `durable-harness` unresolved. test/package/packed-example.test.ts type-checks it.
      'examples/support-agent/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/core/**/*.ts', 'src/shared/**/*.ts', 'src/workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: SANDBOX_FORBIDDEN }],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'No process access in workflow-side code.' },
        { name: 'setTimeout', message: 'Use workflow sleep(); core code takes time as an argument.' },
      ],
    },
  },
  {
    // The pure core takes time and ids as arguments: no clock, no randomness.
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'The core takes time as an argument.' },
        { object: 'Math', property: 'random', message: 'The core takes ids as arguments.' },
      ],
    },
  },
  {
    // The two front ends only present: what both do (overview, fork, tree, transfer) lives below them in
    // src/operations, which imports neither.
    files: ['src/console/**/*.ts', 'src/operations/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/cli/*', '**/cli/**'], message: 'Shared operations live in src/operations, not in the CLI.' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/operations/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/cli/*', '**/cli/**'], message: 'src/operations sits below the CLI.' },
            { group: ['**/console/*', '**/console/**'], message: 'src/operations sits below the console.' },
          ],
        },
      ],
    },
  },
  {
    // Plain Node scripts outside the TypeScript project: lint them without type information.
    files: ['**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { process: 'readonly', console: 'readonly' },
    },
  },
  {
    // Tests tamper with frozen objects and parse wire JSON on purpose; type-unsafe access is the point there.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
);

// Bundles the session workflows (src/workflows/index.ts), optionally with the workflow tracing
// interceptors, with Temporal's webpack bundler into one file, so workers load prebuilt code.
// Workers reuse bundles through the content-keyed cache in workflow-bundle-cache.ts.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../observability/workflow-tracing.js';

/**
 * The folder the session workflows are bundled from (it holds workflows/, core/, shared/): the one this module
 * runs from — src/ from the sources (and from the CLI bundle, whose `import.meta.url` names them), dist/src/
 * from the tsc build. An installed package ships no sources, so its CLI bundle takes the package's dist/src/
 * (Temporal's bundler would not compile TypeScript under node_modules anyway).
 */
export function workflowSourceDir(): string {
  const here = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  if (existsSync(join(here, 'workflows'))) return here;
  const built = join(here, '..', 'dist', 'src');
  return existsSync(join(built, 'workflows')) ? built : here;
}

/**
 * The workflow entry point in `sourceDir`: `index.ts` in the sources, `index.js` in a build. Relative imports
 * inside it use `.js` extensions for `.ts` files (NodeNext); the bundler's own webpack config maps them
 * (`resolve.extensionAlias`), so no config hook is needed.
 */
export function sessionWorkflowsPath(sourceDir = workflowSourceDir()): string {
  const source = join(sourceDir, 'workflows', 'index.ts');
  return existsSync(source) ? source : join(sourceDir, 'workflows', 'index.js');
}

export interface BundleOptions {
  /**
   * Include Temporal's OpenTelemetry workflow interceptors (workflow spans, trace headers on activities).
   * Off by default: they cost about 2 MiB per cached workflow (bench/RESULTS.md, the idle-sessions runs).
   */
  readonly tracing?: boolean;
}

/** The interceptor modules a bundle with these options carries. */
export function bundleInterceptorModules(options: BundleOptions = {}): string[] {
  return options.tracing ? [...WORKFLOW_INTERCEPTOR_MODULES] : [];
}

/**
 * The bundle's code (the workflow entry `workflowsPath`, default sessionWorkflowsPath()). Everything
 * that shapes the output besides the sources and packages is here: change it and bump
 * BUNDLE_CACHE_FORMAT in workflow-bundle-cache.ts, or workers keep loading bundles of the old shape.
 */
export async function bundleSessionWorkflowCode(
  options: BundleOptions & { readonly workflowsPath?: string } = {},
): Promise<string> {
  const workflowsPath = options.workflowsPath ?? sessionWorkflowsPath();
  try {
    const { code } = await bundleWorkflowCode({
      workflowsPath,
      workflowInterceptorModules: bundleInterceptorModules(options),
      // shared-zod and zod, which it imports, are loaded once per workflow thread and shared by every
      // workflow; the reusable VM instantiates every other module for each workflow. (A bare 'zod' here
      // would be dropped: its package declares no side effects.)
      preloadModules: [join(dirname(workflowsPath), `shared-zod${extname(workflowsPath)}`)],
      // Webpack's progress lines are noise; warnings and errors still show.
      logger: new DefaultLogger('WARN'),
    });
    return code;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(
      `bundling the session workflows (${workflowsPath}) failed. Workflow code must not import Node built-ins ` +
        `or Node-side modules (see CONTRIBUTING.md); the bundler said:\n${message}`,
      { cause: error },
    );
  }
}

/** Bundles from source into `outFile` (default: a new temporary directory), every time. */
export async function bundleSessionWorkflows(
  outFile?: string,
  options: BundleOptions = {},
): Promise<{ codePath: string }> {
  const code = await bundleSessionWorkflowCode(options);
  const codePath = outFile ?? join(await mkdtemp(join(tmpdir(), 'dh-workflows-')), 'workflow-bundle.js');
  await mkdir(dirname(codePath), { recursive: true });
  await writeFile(codePath, code);
  return { codePath };
}

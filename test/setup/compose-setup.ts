// A vitest project's global setup made of pieces (test/setup/setup-pieces.ts), run concurrently. A piece that two
// projects of one run need starts once and stops with the last of them: the registry lives on globalThis, since
// each project loads its setup through a module runner of its own.
import type { ProvidedContext } from 'vitest';
import type { TestProject } from 'vitest/node';
import { TEST_PROJECTS, type TestProjectName } from '../projects.js';
import type { Provisioned, SetupPiece } from './setup-pieces.js';

interface Held {
  readonly provisioned: Promise<Provisioned>;
  /** The pieces this one started through `need`, released after it stops. */
  readonly needs: SetupPiece[];
  holders: number;
}

const REGISTRY = Symbol.for('durable-harness.test-setup-pieces');
const globals = globalThis as { [REGISTRY]?: Map<string, Held> };
const registry = (globals[REGISTRY] ??= new Map<string, Held>());

function acquire(piece: SetupPiece): Promise<Provisioned> {
  const held = registry.get(piece.name);
  if (held !== undefined) {
    held.holders += 1;
    return held.provisioned;
  }
  const needs: SetupPiece[] = [];
  const provisioned = piece.start((other) => {
    needs.push(other);
    return acquire(other);
  });
  registry.set(piece.name, { provisioned, needs, holders: 1 });
  return provisioned;
}

async function release(piece: SetupPiece): Promise<void> {
  const held = registry.get(piece.name);
  if (held === undefined) return;
  held.holders -= 1;
  if (held.holders > 0) return;
  registry.delete(piece.name);
  try {
    const provisioned = await held.provisioned.catch(() => undefined);
    await provisioned?.stop?.();
  } finally {
    for (const need of [...held.needs].reverse()) await release(need);
  }
}

/** The global setup of a project that needs `pieces`; it provides exactly what projects.ts says it does. */
export function composeSetup(pieces: readonly SetupPiece[]): (project: TestProject) => Promise<() => Promise<void>> {
  return async (project) => {
    const declared = TEST_PROJECTS[project.name as TestProjectName] as
      (typeof TEST_PROJECTS)[TestProjectName] | undefined;
    if (declared === undefined) throw new Error(`test/projects.ts has no project named ${project.name}`);
    // Vitest puts no timeout on global setup, so a cold Go build (the cluster tests' server, minutes) may run here.
    const results = await Promise.allSettled(pieces.map(acquire));
    const teardown = async () => {
      for (const piece of [...pieces].reverse()) await release(piece);
    };
    const failures = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
    if (failures.length > 0) {
      await teardown();
      if (failures.length === 1) throw failures[0];
      throw new AggregateError(failures, failures.map((failure) => String(failure)).join('\n'));
    }
    const values: Partial<ProvidedContext> = Object.assign(
      {},
      ...results.map((result) => (result.status === 'fulfilled' ? result.value.values : {})),
    );
    const provided = Object.keys(values).sort();
    const expected = [...declared.provides].sort();
    if (provided.join() !== expected.join()) {
      await teardown();
      throw new Error(
        `the ${project.name} setup provides ${provided.join(', ') || 'nothing'}, but test/projects.ts says ` +
          `${expected.join(', ') || 'nothing'}`,
      );
    }
    for (const [key, value] of Object.entries(values) as [keyof ProvidedContext, string][]) project.provide(key, value);
    return teardown;
  };
}

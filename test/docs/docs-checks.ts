// The checks of the docs test, each returning the lies it found as one line each (`file:line: what`): links
// and anchors that lead nowhere, `dh` commands and flags the CLI does not have, DH_* names dh does not read.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';
import type { Command } from 'commander';
import type { EnvVariable } from '../../src/config/env-variables.js';
import { codeTexts, dhMentions, dhVariableNames, headingSlugs, relativeLinks } from './markdown-scan.js';

export interface Doc {
  /** Relative to the repository root, with forward slashes. */
  readonly path: string;
  readonly text: string;
}

/** README.md, CONTRIBUTING.md, RELIABILITY.md and every markdown file under docs/, as they are on disk. */
export function readDocs(root: string): Doc[] {
  const top = ['README.md', 'CONTRIBUTING.md', 'RELIABILITY.md'].filter((file) => existsSync(join(root, file)));
  const docs = existsSync(join(root, 'docs'))
    ? readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
        .filter((file) => file.endsWith('.md'))
        .map((file) => `docs/${file.split(sep).join('/')}`)
    : [];
  return [...top, ...docs.sort()].map((path) => ({ path, text: readFileSync(join(root, path), 'utf8') }));
}

/** Every relative link's file exists inside the repository, and every `#anchor` is a heading of its file. */
export function linkProblems(root: string, docs: readonly Doc[]): string[] {
  const slugsOf = new Map<string, Set<string>>();
  const slugs = (file: string): Set<string> => {
    let known = slugsOf.get(file);
    if (known === undefined) {
      known = headingSlugs(readFileSync(file, 'utf8'));
      slugsOf.set(file, known);
    }
    return known;
  };
  const problems: string[] = [];
  for (const doc of docs) {
    for (const link of relativeLinks(doc.text)) {
      const at = `${doc.path}:${link.line}: (${link.target})`;
      const hash = link.target.indexOf('#');
      const path = decodeURIComponent(hash < 0 ? link.target : link.target.slice(0, hash));
      const anchor = hash < 0 ? null : decodeURIComponent(link.target.slice(hash + 1));
      const file = path === '' ? join(root, doc.path) : resolve(root, dirname(doc.path), path);
      if (relative(root, file).startsWith('..')) {
        problems.push(`${at} leads outside the repository`);
        continue;
      }
      if (!existsSync(file)) {
        problems.push(`${at} ${relative(root, file)} does not exist`);
        continue;
      }
      if (anchor === null) continue;
      if (statSync(file).isDirectory() || extname(file) !== '.md') {
        problems.push(`${at} an anchor into a file that is not markdown`);
      } else if (!slugs(file).has(anchor)) {
        problems.push(`${at} ${relative(root, file)} has no heading #${anchor}`);
      }
    }
  }
  return problems;
}

/** The long flags a command takes (commander's spelling: `--no-wakeup` for a negatable one), plus `--help`. */
function longFlags(command: Command): Set<string> {
  const flags = command.options.map((option) => option.long).filter((flag): flag is string => flag !== undefined);
  return new Set([...flags, '--help']);
}

/** Every `dh <command> [<subcommand>]` written in code is one of the program's, with flags it takes. */
export function commandProblems(program: Command, docs: readonly Doc[]): string[] {
  const problems: string[] = [];
  for (const doc of docs) {
    for (const mention of dhMentions(doc.text)) {
      const at = `${doc.path}:${mention.line}: \`${mention.source}\``;
      const [name, second] = mention.words;
      let target: Command = program;
      let label = 'dh';
      if (name !== undefined) {
        const command = program.commands.find((c) => c.name() === name || c.aliases().includes(name));
        if (command === undefined) {
          problems.push(`${at}: dh ${name} is not a command`);
          continue;
        }
        target = command;
        label = `dh ${name}`;
        if (command.commands.length > 0 && second !== undefined) {
          const sub = command.commands.find((c) => c.name() === second || c.aliases().includes(second));
          if (sub === undefined) {
            problems.push(`${at}: dh ${name} ${second} is not a command`);
            continue;
          }
          target = sub;
          label = `dh ${name} ${second}`;
        }
      }
      const known = longFlags(target);
      for (const flag of mention.flags) {
        if (!known.has(flag)) problems.push(`${at}: ${label} has no option ${flag}`);
      }
    }
  }
  return problems;
}

/** A DH_* name written in a doc is a registered variable, or a prefix (`DH_BENCH_*`) of one. */
function registered(name: string, registry: readonly EnvVariable[]): boolean {
  return name.endsWith('_')
    ? registry.some((variable) => variable.name.startsWith(name))
    : registry.some((variable) => variable.name === name);
}

/** Every DH_* name the docs write is in the registry. */
export function docVariableProblems(docs: readonly Doc[], registry: readonly EnvVariable[]): string[] {
  const problems: string[] = [];
  for (const doc of docs) {
    doc.text.split('\n').forEach((line, i) => {
      for (const name of dhVariableNames(line)) {
        if (!registered(name, registry)) problems.push(`${doc.path}:${i + 1}: ${name} is not a variable dh reads`);
      }
    });
  }
  return problems;
}

/** Every registry entry has a row in the configuration page: a table line with the name as a code span. */
export function undocumentedVariables(configuration: Doc, registry: readonly EnvVariable[]): string[] {
  const rows = configuration.text.split('\n').filter((line) => line.startsWith('|'));
  return registry
    .filter((variable) => !rows.some((row) => row.includes(`\`${variable.name}\``)))
    .map((variable) => `${configuration.path}: no row documents ${variable.name} (${variable.meaning})`);
}

/** Every DH_* name in the code under `dirs` (comments and strings alike), with the files that name it. */
export function codeVariableNames(root: string, dirs: readonly string[]): Map<string, string[]> {
  const names = new Map<string, string[]>();
  for (const dir of dirs) {
    const files = readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' }).filter((file) =>
      /\.(ts|mts|js|mjs|cjs)$/.test(file),
    );
    for (const file of files) {
      const path = `${dir}/${file.split(sep).join('/')}`;
      for (const name of new Set(dhVariableNames(readFileSync(join(root, path), 'utf8')))) {
        names.set(name, [...(names.get(name) ?? []), path]);
      }
    }
  }
  return names;
}

/** Repository paths written as inline code (`src/cli/main.ts`, `test/cluster/`) that do not exist. */
export function pathProblems(root: string, docs: readonly Doc[]): string[] {
  const problems: string[] = [];
  const repoPath = /^(src|test|bench|scripts|examples|docs|deploy|packages|console-ui|schemas|bin)\/[A-Za-z0-9_.\-/]*$/;
  for (const doc of docs) {
    for (const code of codeTexts(doc.text)) {
      const path = code.text.replace(/:\d+$/, '');
      if (!repoPath.test(path) || path.includes('..')) continue;
      if (!existsSync(join(root, path))) problems.push(`${doc.path}:${code.line}: ${path} does not exist`);
    }
  }
  return problems;
}

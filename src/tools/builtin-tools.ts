// All built-in tools in their stable order (the order is part of the recorded request header, so it
// must not depend on anything but the code).
import type { BuiltinTool } from './builtin-tool.js';
import { createEditFileTool } from './edit-file.js';
import { createGlobTool, type GlobToolOptions } from './glob.js';
import { createGrepTool, type GrepToolOptions } from './grep.js';
import { createListDirTool, type ListDirToolOptions } from './list-dir.js';
import { createReadFileTool, type ReadFileToolOptions } from './read-file.js';
import { createShellTool, type ShellTool, type ShellToolOptions } from './shell.js';
import { createWriteFileTool } from './write-file.js';

export interface BuiltinToolsOptions {
  readonly readFile?: ReadFileToolOptions;
  readonly listDir?: ListDirToolOptions;
  readonly glob?: GlobToolOptions;
  readonly grep?: GrepToolOptions;
  readonly shell?: ShellToolOptions;
}

/** read_file, write_file, edit_file, list_dir, glob, grep, then the shell (whose sandbox status it carries). */
export type BuiltinToolList = readonly [
  BuiltinTool,
  BuiltinTool,
  BuiltinTool,
  BuiltinTool,
  BuiltinTool,
  BuiltinTool,
  ShellTool,
];

/**
 * Creates every built-in tool. Throws `SandboxUnavailableError` only for `shell.sandbox: 'bwrap'` on
 * a host where bubblewrap does not work; with `auto` the shell falls back (see its `sandboxUnavailable`).
 */
export function createBuiltinTools(options: BuiltinToolsOptions = {}): BuiltinToolList {
  return [
    createReadFileTool(options.readFile),
    createWriteFileTool(),
    createEditFileTool(),
    createListDirTool(options.listDir),
    createGlobTool(options.glob),
    createGrepTool(options.grep),
    createShellTool(options.shell),
  ];
}

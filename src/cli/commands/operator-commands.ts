// Operator commands over the log (log, show, audit, replay, fork, resume, export, import, demo).
// Owned by the operator-CLI work; registered here so main.ts stays stable.
import type { Command } from 'commander';

export function registerOperatorCommands(_program: Command): void {}

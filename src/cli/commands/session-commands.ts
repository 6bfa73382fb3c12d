// Commands that run and steer sessions (up/down/status, run, send, steer, inject, interrupt, approve,
// close, attach, ls). Owned by the live-CLI work; registered here so main.ts stays stable.
import type { Command } from 'commander';

export function registerSessionCommands(_program: Command): void {}

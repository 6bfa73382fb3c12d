// The session's search attributes (status, turns, tokens), so the Temporal UI can show and filter sessions.
import { upsertSearchAttributes } from '@temporalio/workflow';
import type { SessionStatus } from '../shared/session-messages.js';
import {
  SESSION_STATUS_ATTRIBUTE,
  SESSION_TOKENS_ATTRIBUTE,
  SESSION_TURNS_ATTRIBUTE,
} from '../shared/search-attributes.js';
import type { SessionState } from './session-state.js';
import { since } from './workflow-patches.js';

/**
 * Publishes status, turns and tokens for the Temporal UI. Behind a patch: runs recorded before
 * this existed replay without the upsert commands (docs/versioning.md).
 */
export function publishStatus(state: SessionState, status: SessionStatus): void {
  if (!since(state, 'session-search-attributes')) return;
  upsertSearchAttributes([
    { key: SESSION_STATUS_ATTRIBUTE, value: status },
    { key: SESSION_TURNS_ATTRIBUTE, value: state.lastTurn },
    { key: SESSION_TOKENS_ATTRIBUTE, value: state.sessionTokens },
  ]);
}

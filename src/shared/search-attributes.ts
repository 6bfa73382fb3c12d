// The search attributes a session publishes, so the Temporal UI can show and filter sessions by
// status, turn count and token total. They must be registered on the cluster (see docs/local-stack.md).
import { defineSearchAttributeKey } from '@temporalio/common';

export const SESSION_STATUS_ATTRIBUTE = defineSearchAttributeKey('DhSessionStatus', 'KEYWORD');
export const SESSION_TURNS_ATTRIBUTE = defineSearchAttributeKey('DhTurns', 'INT');
export const SESSION_TOKENS_ATTRIBUTE = defineSearchAttributeKey('DhTotalTokens', 'INT');
/** A subagent's parent session id, set when the child starts (`dh ls` draws the tree from it). */
export const SESSION_PARENT_ATTRIBUTE = defineSearchAttributeKey('DhParentSession', 'KEYWORD');

/** Every attribute above: what a cluster (or the embedded dev server) must have registered. */
export const SESSION_SEARCH_ATTRIBUTE_KEYS = [
  SESSION_STATUS_ATTRIBUTE,
  SESSION_TURNS_ATTRIBUTE,
  SESSION_TOKENS_ATTRIBUTE,
  SESSION_PARENT_ATTRIBUTE,
] as const;

// The search attributes a session publishes, so the Temporal UI can show and filter sessions by
// status, turn count and token total. They must be registered on the cluster (see the README).
import { defineSearchAttributeKey } from '@temporalio/common';

export const SESSION_STATUS_ATTRIBUTE = defineSearchAttributeKey('DhSessionStatus', 'KEYWORD');
export const SESSION_TURNS_ATTRIBUTE = defineSearchAttributeKey('DhTurns', 'INT');
export const SESSION_TOKENS_ATTRIBUTE = defineSearchAttributeKey('DhTotalTokens', 'INT');

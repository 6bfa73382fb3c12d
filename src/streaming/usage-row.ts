// The `usage` delta row: a streaming step's token counts as the provider reported them, with their cost
// where the worker prices the model, carried as JSON in the row's text (the row format gains no column).
import { z } from 'zod';
import { StepCost, Usage } from '../core/index.js';

const UsageRow = z.object({ usage: Usage, cost: StepCost.nullable().optional() });

export interface ReportedUsage {
  readonly usage: Usage;
  readonly cost: StepCost | null;
}

export function formatUsageRow(reported: ReportedUsage): string {
  return JSON.stringify({ usage: reported.usage, cost: reported.cost });
}

/** The row's usage, or null for text a reader cannot use (a newer writer's shape, a damaged row). */
export function parseUsageRow(text: string): ReportedUsage | null {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = UsageRow.safeParse(json);
  return parsed.success ? { usage: parsed.data.usage, cost: parsed.data.cost ?? null } : null;
}

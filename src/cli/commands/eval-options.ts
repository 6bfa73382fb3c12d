// The options of `dh eval` as commander parses them (eval-command.ts), read by eval-action.ts.
export interface EvalOptions {
  readonly query?: string;
  readonly since?: string;
  readonly model?: string;
  readonly provider?: string;
  readonly temperature?: number;
  readonly system?: string;
  readonly headerChange?: string;
  readonly at?: 'step' | 'turn';
  readonly continue?: boolean;
  readonly allowTool: string[];
  readonly maxSteps?: number;
  readonly concurrency: number;
  readonly budget?: number;
  readonly taskQueue?: string;
  readonly runId?: string;
  readonly limit: number;
  readonly show?: string;
  readonly detach?: boolean;
  readonly json?: boolean;
}

// The bare baseline's activities: no-ops that only note when they ran (for per-step timings).

export interface BareActivities {
  bareModel(step: number): Promise<number>;
  bareTool(step: number): Promise<number>;
}

/** `starts` receives performance.now() at each activity's start, in arrival order. */
export function createBareActivities(starts: { model: number[]; tool: number[] }): BareActivities {
  return {
    bareModel: (step) => {
      starts.model.push(performance.now());
      return Promise.resolve(step);
    },
    bareTool: (step) => {
      starts.tool.push(performance.now());
      return Promise.resolve(step);
    },
  };
}

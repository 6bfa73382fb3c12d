// Signals a child started with `detached: true` together with everything it started (its process group),
// falling back to the process alone; a process that is already gone is not an error.
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

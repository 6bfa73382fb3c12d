// A status as a badge: its word, always, on a colour that says at a glance whether it is at work, waiting for
// input, done, or went wrong (the word carries it for whoever does not see the colour).
const TONES: Record<string, string> = {
  running: 'busy',
  aborting: 'busy',
  pending: 'busy',
  RUNNING: 'busy',
  idle: 'ready',
  answered: 'ready',
  COMPLETED: 'ready',
  closed: 'done',
  completed: 'done',
  skipped: 'warn',
  canceled: 'warn',
  CANCELED: 'warn',
  'continued as new': 'done',
  failed: 'bad',
  terminated: 'bad',
  'timed out': 'bad',
  FAILED: 'bad',
  TERMINATED: 'bad',
  TIMED_OUT: 'bad',
};

/** The tone class of a status (`tone-busy`, `tone-ready`, `tone-done`, `tone-warn`, `tone-bad`, `tone-unknown`). */
export function statusTone(status: string): string {
  return `tone-${TONES[status] ?? 'unknown'}`;
}

export function StatusBadge(props: { status: string; testId?: string }) {
  return (
    <span class={`badge status-badge ${statusTone(props.status)}`} data-testid={props.testId}>
      {props.status}
    </span>
  );
}

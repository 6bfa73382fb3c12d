// Small display helpers shared by the views: short forms for narrow cells (the exact value goes in a title),
// counts with their noun in the right number, and one mark for "nothing here".

/** What a cell shows for a value the log does not have (never `null`, `-` or `NaN`). */
export const NONE = '—';

/** "1 message", "3 messages", "1 step": a count with its noun. */
export function plural(n: number, noun: string, nouns = `${noun}s`): string {
  return `${grouped(n)} ${n === 1 ? noun : nouns}`;
}

export function percent(share: number | null): string {
  return share === null ? NONE : `${Math.round(share * 100)}%`;
}

/** "12s ago", "5m ago", "3h ago", "2d ago": short enough for a list cell; `fullTime` gives the exact moment. */
export function ago(epochMs: number | null, now = Date.now()): string {
  if (epochMs === null) return NONE;
  const s = Math.max(0, Math.round((now - epochMs) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

export function fullTime(epochMs: number | null): string {
  return epochMs === null ? '' : new Date(epochMs).toLocaleString();
}

export function clip(text: string, max = 160): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

const COMPACT = new Intl.NumberFormat('en', { notation: 'compact', maximumFractionDigits: 1 });
const GROUPED = new Intl.NumberFormat('en');

/** 1.2K, 34M: token counts in a narrow cell. */
export function compactNumber(n: number): string {
  return COMPACT.format(n);
}

export function grouped(n: number): string {
  return GROUPED.format(n);
}

/** Dollars with enough digits that a cheap step does not read as $0.00. */
export function usd(amount: number): string {
  // Below a hundredth of a cent four places would read as nothing spent.
  if (amount > 0 && amount < 0.00005) return '<$0.0001';
  return `$${amount < 1 ? amount.toFixed(4) : amount.toFixed(2)}`;
}

/** A cost, or "no price" when the worker had no price for the model (the same words everywhere). */
export function price(amount: number | null): string {
  return amount === null ? 'no price' : usd(amount);
}

export function duration(ms: number | null): string {
  if (ms === null) return NONE;
  // A number and its unit never part at a line's end.
  if (ms < 1000) return `${Math.round(ms)}\u00a0ms`;
  return ms < 60_000
    ? `${(ms / 1000).toFixed(1)}\u00a0s`
    : `${Math.floor(ms / 60_000)}m ${Math.round((ms % 60_000) / 1000)}s`;
}

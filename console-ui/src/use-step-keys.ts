// Keyboard moves between a session's steps: j / ArrowDown and k / ArrowUp move the focus ring, Enter on the
// focused step opens (or closes) what the model saw, Escape closes it. Keys typed into a field are left alone,
// and so is Enter on a button or link (it does what that element does).
import { useEffect, useRef } from 'preact/hooks';

export interface StepKeys {
  /** The steps' keys in timeline order. */
  readonly order: readonly string[];
  readonly focused: string | null;
  readonly move: (key: string) => void;
  readonly toggle: (key: string) => void;
  readonly close: () => void;
}

function typing(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName);
}

/** The step the focus is in now (the DOM knows at once; the page's state only after its next render). */
function focusedNow(fallback: string | null): string | null {
  const active = document.activeElement;
  const step = active instanceof HTMLElement ? active.closest('article.step') : null;
  return step?.getAttribute('data-step') ?? fallback;
}

export function useStepKeys(keys: StepKeys): void {
  // One listener for the page's life, reading the latest steps and callbacks: keys pressed in quick
  // succession must not meet a listener bound to an older render.
  const latest = useRef(keys);
  latest.current = keys;
  useEffect(() => {
    const onKey = (e: KeyboardEvent): void => {
      if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || typing(e.target)) return;
      const { order, move, toggle, close, focused } = latest.current;
      const target = e.target instanceof HTMLElement ? e.target : null;
      const current = focusedNow(focused);
      const at = current === null ? -1 : order.indexOf(current);
      const go = (delta: number) => {
        const next = order[Math.max(0, Math.min(order.length - 1, at < 0 ? 0 : at + delta))];
        if (next === undefined) return;
        e.preventDefault();
        move(next);
      };
      if (e.key === 'j' || e.key === 'ArrowDown') go(1);
      else if (e.key === 'k' || e.key === 'ArrowUp') go(-1);
      else if (e.key === 'Escape') close();
      else if (e.key === 'Enter' && current !== null) {
        // Enter on a button, link or folded card does what that element does.
        if (target !== null && target !== document.body && !target.matches('article.step')) return;
        e.preventDefault();
        toggle(current);
      }
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
}

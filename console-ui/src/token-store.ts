// The bearer token for servers that require one: kept in sessionStorage, filled from `#token=…` in the
// URL (then removed from the address bar so it does not linger in history or screenshots). Whether the server
// requires one is learnt from its answers (a 401), so a console on loopback never asks for it.
const KEY = 'dh-console-token';

export function readToken(): string {
  const fromHash = /(?:^#|&)token=([^&]*)/.exec(window.location.hash);
  if (fromHash?.[1] !== undefined) {
    saveToken(decodeURIComponent(fromHash[1]));
    history.replaceState(null, '', window.location.pathname + window.location.search);
  }
  return sessionStorage.getItem(KEY) ?? '';
}

export function saveToken(token: string): void {
  if (token === '') sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, token);
}

let required = false;
const listeners = new Set<() => void>();

/** The server refused a request for want of the token (or a wrong one): the page shows the token field. */
export function noteTokenRequired(): void {
  if (required) return;
  required = true;
  for (const listener of listeners) listener();
}

export function tokenRequired(): boolean {
  return required;
}

/** Calls `listener` once the server has asked for the token; returns the unsubscribe. */
export function onTokenRequired(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

// The bearer token for servers that require one: kept in sessionStorage, filled from `#token=…` in the
// URL (then removed from the address bar so it does not linger in history or screenshots).
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

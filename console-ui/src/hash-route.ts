// Where the page is, in the address: `#/sessions/<id>` opens a session, `#/sessions/<id>/steps/<turn>/<step>`
// opens it on one step with its request shown (a permalink). `#session=<id>` (older links) still opens one.
export interface StepRef {
  readonly turn: number;
  readonly step: number;
}

export interface HashRoute {
  readonly sessionId: string | null;
  readonly step: StepRef | null;
}

export const NO_ROUTE: HashRoute = { sessionId: null, step: null };

export function parseHashRoute(hash: string): HashRoute {
  const path = /^#\/sessions\/([^/]+)(?:\/steps\/(\d+)\/(\d+))?\/?$/.exec(hash);
  if (path?.[1] !== undefined) {
    const sessionId = safeDecode(path[1]);
    if (sessionId === '') return NO_ROUTE;
    const step =
      path[2] !== undefined && path[3] !== undefined ? { turn: Number(path[2]), step: Number(path[3]) } : null;
    return { sessionId, step };
  }
  const legacy = new URLSearchParams(hash.replace(/^#/, '')).get('session');
  return legacy !== null && legacy !== '' ? { sessionId: legacy, step: null } : NO_ROUTE;
}

export function routeHash(route: HashRoute): string {
  if (route.sessionId === null) return '';
  const session = `#/sessions/${encodeURIComponent(route.sessionId)}`;
  return route.step === null ? session : `${session}/steps/${route.step.turn}/${route.step.step}`;
}

/** Records `route` in the address without a hashchange (the page already shows it). */
export function showRoute(route: HashRoute, push = false): void {
  const hash = routeHash(route);
  if (hash === location.hash) return;
  const url = hash === '' ? location.pathname + location.search : hash;
  if (push) history.pushState(null, '', url);
  else history.replaceState(null, '', url);
}

export function stepKey(ref: StepRef): string {
  return `${ref.turn}.${ref.step}`;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return '';
  }
}

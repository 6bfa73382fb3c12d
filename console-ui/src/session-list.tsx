// The session list: status, turns, tokens, cache-read share, last activity; filters (status, text, start
// time), pages by the API's page token, and subagents under their parents with a toggle that folds them.
// The table keeps to its column (fixed layout, cells cut with the whole value in a title); on a phone each
// session is two lines, its id across the width and its figures under it. Each id is a link to the session.
import { useState } from 'preact/hooks';
import type { SessionList, SessionListItem } from '../../src/console/console-api.js';
import { CONSOLE_ROUTES } from '../../src/console/console-api.js';
import { apiGet } from './api-client.js';
import { ago, compactNumber, fullTime, grouped, percent } from './format.js';
import { routeHash } from './hash-route.js';
import { DEFAULT_FILTERS, listQuery, SessionFilters, type ListFilters } from './session-filters.js';
import { StatusBadge } from './status-badge.js';
import { usePolling } from './use-polling.js';

interface Row {
  readonly item: SessionListItem;
  readonly hasChildren: boolean;
}

/** The rows to draw: a folded parent hides every row below it that is deeper (its subtree). */
export function visibleRows(items: readonly SessionListItem[], folded: ReadonlySet<string>): Row[] {
  const rows: Row[] = [];
  let hiddenBelow: number | null = null;
  for (const [i, item] of items.entries()) {
    if (hiddenBelow !== null && item.depth > hiddenBelow) continue;
    hiddenBelow = null;
    const hasChildren = (items[i + 1]?.depth ?? -1) > item.depth;
    rows.push({ item, hasChildren });
    if (hasChildren && folded.has(item.sessionId)) hiddenBelow = item.depth;
  }
  return rows;
}

export function SessionListView(props: { selected: string | null }) {
  const [filters, setFiltersState] = useState<ListFilters>(DEFAULT_FILTERS);
  // The tokens of the pages walked so far: the last one is the page shown (null: the first page).
  const [pages, setPages] = useState<readonly (string | null)[]>([null]);
  const [folded, setFolded] = useState<ReadonlySet<string>>(new Set());
  const token = pages[pages.length - 1] ?? null;
  const query = listQuery(filters, token);
  const list = usePolling(() => apiGet<SessionList>(CONSOLE_ROUTES.sessions + query), 2000, query);
  const setFilters = (patch: Partial<ListFilters>) => {
    setFiltersState((old) => ({ ...old, ...patch }));
    setPages([null]);
  };
  const toggle = (id: string) =>
    setFolded((old) => {
      const next = new Set(old);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  const next = list.value?.nextPageToken ?? null;
  const rows = visibleRows(list.value?.sessions ?? [], folded);
  return (
    <section aria-label="Sessions" class="session-list">
      <h2>Sessions</h2>
      <SessionFilters filters={filters} onChange={setFilters} />
      {list.error !== null && <p role="alert">{list.error}</p>}
      <table class="sessions stacks" aria-label="Session list">
        <colgroup>
          <col />
          <col class="c-status" />
          <col class="c-turns" />
          <col class="c-tokens" />
          <col class="c-cache" />
          <col class="c-last" />
        </colgroup>
        <thead>
          <tr>
            <th>Session</th>
            <th>Status</th>
            <th>Turns</th>
            <th>Tokens</th>
            <th>Cache read</th>
            <th>Last activity</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(({ item: s, hasChildren }) => (
            <tr key={s.sessionId} aria-selected={s.sessionId === props.selected} data-depth={s.depth}>
              <td class="c-id">
                <div class="id-cell" style={{ paddingLeft: `${s.depth}em` }}>
                  {hasChildren ? (
                    <button
                      type="button"
                      class="twisty"
                      aria-expanded={!folded.has(s.sessionId)}
                      aria-label={`Subagents of ${s.sessionId}`}
                      onClick={() => toggle(s.sessionId)}
                    >
                      {folded.has(s.sessionId) ? '▸' : '▾'}
                    </button>
                  ) : (
                    <span class="twisty-space">{s.depth > 0 ? '└' : ''}</span>
                  )}
                  {/* A link (a new tab, a copied address); a plain click is the page's own hash navigation. */}
                  <a
                    href={routeHash({ sessionId: s.sessionId, step: null })}
                    class="session-link"
                    title={s.sessionId}
                    aria-current={s.sessionId === props.selected ? 'page' : undefined}
                  >
                    {s.sessionId}
                  </a>
                </div>
              </td>
              <td data-label="Status" title={s.status}>
                <StatusBadge status={s.status} />
              </td>
              <td data-label="Turns">{s.turns}</td>
              <td data-label="Tokens" title={`${grouped(s.tokens)} tokens`}>
                {compactNumber(s.tokens)}
              </td>
              <td data-label="Cache read">{percent(s.cacheReadShare)}</td>
              <td data-label="Last activity" title={fullTime(s.lastActivity)}>
                {ago(s.lastActivity)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.value?.sessions.length === 0 && <p>No sessions{pages.length > 1 ? ' on this page' : ''}.</p>}
      <nav class="pager" aria-label="Pages">
        <button
          type="button"
          disabled={pages.length <= 1}
          onClick={() => setPages((p) => (p.length > 1 ? p.slice(0, -1) : p))}
        >
          Previous page
        </button>{' '}
        <span data-testid="page-number">Page {pages.length}</span>{' '}
        <button type="button" disabled={next === null} onClick={() => next !== null && setPages((p) => [...p, next])}>
          Next page
        </button>
        {list.value?.source !== undefined && (
          <span class="muted" title="where this page came from">
            {' '}
            · {list.value.source === 'visibility' ? 'Temporal visibility' : 'the store'}
          </span>
        )}
      </nav>
    </section>
  );
}

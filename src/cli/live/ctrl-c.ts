// Ctrl-C as a person presses it: SIGINTs that arrive together are one keypress. Under `npx dh run` one
// keypress reaches dh twice — the terminal signals the whole foreground process group, and npm forwards
// its own copy to its child within milliseconds — and must not count as the second Ctrl-C that detaches.

/** SIGINTs closer than this to the first are that same Ctrl-C; a person's second press takes longer. */
export const CTRL_C_WINDOW_MS = 250;

/** A SIGINT handler: `first` on the first Ctrl-C, `again` on each SIGINT from `windowMs` after it on. */
export function ctrlC(
  handlers: { readonly first: () => void; readonly again: () => void },
  windowMs = CTRL_C_WINDOW_MS,
  clock: () => number = () => performance.now(),
): () => void {
  let firstAt: number | null = null;
  return () => {
    const now = clock();
    if (firstAt === null) {
      firstAt = now;
      handlers.first();
    } else if (now - firstAt >= windowMs) {
      handlers.again();
    }
  };
}

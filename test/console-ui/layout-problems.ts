// What is wrong with the page's layout as a person would see it, measured in the page: sideways scrolling, a
// box scrolling sideways inside, text that spills out of its box or runs into other text, text cut without a
// tooltip (or cut to a few letters), words broken across lines, a short line squeezed over three or more, and
// text too faint to read on its background.
import type { Page } from 'playwright-core';

// Code run in the page: this project's TypeScript has no DOM types, so the page's globals are declared loosely.
declare const document: any, window: any, NodeFilter: any, getComputedStyle: any;

/** One problem, in words: what it is and where (the element's tag, class, label and the start of its text). */
export type LayoutProblem = string;

/**
 * The problems of the page as it is drawn now (the whole page, not only what is scrolled into view). Boxes a
 * scrolling container hides are left out; so are the insides of `pre` and `code`, which may break anywhere.
 */
export function layoutProblems(page: Page): Promise<LayoutProblem[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    const root = document.documentElement;
    const viewportWidth = root.clientWidth;
    const name = (el: any): string => {
      const label = el.getAttribute?.('aria-label');
      const cls =
        typeof el.className === 'string' && el.className !== '' ? `.${el.className.split(/\s+/).join('.')}` : '';
      const text = (el.textContent ?? '').replace(/\s+/g, ' ').trim().slice(0, 40);
      return `<${el.tagName.toLowerCase()}${cls}${label ? ` "${label}"` : ''}> "${text}"`;
    };
    // Drawn: not hidden, and not inside a closed <details> (whose content keeps its boxes, unpainted).
    const shown = (el: any): boolean =>
      el.getClientRects().length > 0 && el.checkVisibility({ contentVisibilityAuto: true, visibilityProperty: true });

    // The part of the page each element may draw in: its ancestors that clip (overflow other than visible)
    // cut it down, in page coordinates. Cached per element.
    const clips = new Map<any, { left: number; top: number; right: number; bottom: number }>();
    const everywhere = { left: -Infinity, top: -Infinity, right: Infinity, bottom: Infinity };
    const clipOf = (el: any): { left: number; top: number; right: number; bottom: number } => {
      if (el === null || el === root || el === document.body) return everywhere;
      const cached = clips.get(el);
      if (cached !== undefined) return cached;
      const outer = clipOf(el.parentElement);
      const s = getComputedStyle(el);
      let clip = outer;
      if (s.overflowX !== 'visible' || s.overflowY !== 'visible') {
        const r = el.getBoundingClientRect();
        const mine = {
          left: s.overflowX === 'visible' ? -Infinity : r.left + window.scrollX,
          right: s.overflowX === 'visible' ? Infinity : r.right + window.scrollX,
          top: s.overflowY === 'visible' ? -Infinity : r.top + window.scrollY,
          bottom: s.overflowY === 'visible' ? Infinity : r.bottom + window.scrollY,
        };
        clip = {
          left: Math.max(outer.left, mine.left),
          top: Math.max(outer.top, mine.top),
          right: Math.min(outer.right, mine.right),
          bottom: Math.min(outer.bottom, mine.bottom),
        };
      }
      clips.set(el, clip);
      return clip;
    };
    /** A client rect in page coordinates, cut to what its element's clipping ancestors let show; null if none. */
    const visiblePart = (rect: any, el: any) => {
      const c = clipOf(el);
      const left = Math.max(rect.left + window.scrollX, c.left);
      const right = Math.min(rect.right + window.scrollX, c.right);
      const top = Math.max(rect.top + window.scrollY, c.top);
      const bottom = Math.min(rect.bottom + window.scrollY, c.bottom);
      return right - left > 1 && bottom - top > 1 ? { left, right, top, bottom } : null;
    };
    const inCode = (el: any): boolean => el.closest('pre, code, kbd, textarea') !== null;

    // 1. The page scrolls sideways.
    if (root.scrollWidth > viewportWidth + 1) {
      const widest = [...document.body.querySelectorAll('*')]
        .filter((el: any) => shown(el) && el.getBoundingClientRect().right + window.scrollX > viewportWidth + 1)
        .slice(-1)[0];
      problems.push(
        `the page is ${root.scrollWidth} px wide on a ${viewportWidth} px screen` +
          (widest !== undefined ? ` (e.g. ${name(widest)})` : ''),
      );
    }

    const elements = [...document.body.querySelectorAll('*')].filter(shown);
    const hasText = (el: any): boolean => (el.textContent ?? '').trim() !== '';
    const spilling: any[] = [];
    for (const el of elements) {
      const s = getComputedStyle(el);
      if (el.tagName === 'CANVAS' || !hasText(el) || el.scrollWidth <= el.clientWidth + 1 || el.clientWidth <= 1)
        continue;
      // Out of sight (a header kept for screen readers only, a part scrolled away): nothing to see there.
      if (visiblePart(el.getBoundingClientRect(), el.parentElement) === null) continue;
      if (s.overflowX === 'auto' || s.overflowX === 'scroll') {
        // 2. A box that scrolls sideways hides part of what it holds (columns off to the right).
        problems.push(`${name(el)} scrolls sideways: ${el.scrollWidth} px of content in ${el.clientWidth} px`);
      } else if (s.overflowX === 'hidden' || s.overflowX === 'clip') {
        // 3. Text cut: only with the whole of it in a tooltip, and never down to a few letters.
        // The tooltip of the cut thing itself, or of the cell or item it is in.
        const holder = el.closest('[title], td, th, li, dd, section, article, figure');
        const title = holder?.getAttribute('title') ?? '';
        if (title === '')
          problems.push(`${name(el)} is cut with no tooltip (${el.scrollWidth} px in ${el.clientWidth} px)`);
        else if (el.clientWidth < 80) problems.push(`${name(el)} is cut to ${el.clientWidth} px`);
      } else if (s.display !== 'inline' && !inCode(el)) {
        // 4. Text that spills out of its box (into the next cell, over its neighbour).
        spilling.push(el);
      }
    }
    // Each box a spill passes through overflows too: name the innermost.
    for (const el of spilling) {
      if (spilling.some((other) => other !== el && el.contains(other))) continue;
      problems.push(`${name(el)} spills out of its box: ${el.scrollWidth} px of content in ${el.clientWidth} px`);
    }

    // The text on the page: each text node's line fragments, as much of them as shows.
    interface Fragment {
      readonly node: any;
      readonly left: number;
      readonly right: number;
      readonly top: number;
      readonly bottom: number;
    }
    const fragments: Fragment[] = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      const parent = node.parentElement;
      const text = node.textContent ?? '';
      if (parent === null || text.trim() === '' || !shown(parent)) continue;
      range.selectNodeContents(node);
      const lines = new Set<number>();
      for (const rect of range.getClientRects()) {
        const part = visiblePart(rect, parent);
        if (part === null) continue;
        fragments.push({ node, ...part });
        lines.add(Math.round(part.top));
      }
      if (inCode(parent)) continue;
      // 5. A short text squeezed into a narrow column, a word or two a line (its own line breaks aside).
      const preformatted = String(getComputedStyle(parent).whiteSpace).startsWith('pre');
      if (!preformatted && text.trim().length <= 80 && lines.size >= 3) {
        problems.push(`${name(parent)} is squeezed over ${lines.size} lines`);
      }
      // 6. A word broken across lines (a cell too narrow for it). A long token (a URL, an id, code) may break
      // anywhere, and a compound at its hyphens: only the letters of a short token must stay on one line.
      for (const token of text.matchAll(/\S+/gu)) {
        if (token[0].length > 30) continue;
        for (const match of token[0].matchAll(/\p{L}{2,}/gu)) {
          const at = (token.index ?? 0) + (match.index ?? 0);
          range.setStart(node, at);
          range.setEnd(node, at + match[0].length);
          const tops = new Set([...range.getClientRects()].map((r: any) => Math.round(r.top)));
          if (tops.size > 1) problems.push(`the word "${match[0]}" in ${name(parent)} is broken across lines`);
        }
      }
    }
    // 7. Text too faint on its background: WCAG AA, 4.5:1 (3:1 for large text); a disabled control is exempt.
    const rgba = (css: string): number[] => (css.match(/[\d.]+/g) ?? []).map(Number);
    const luminance = ([r, g, b]: number[]): number => {
      const channel = (v: number) => {
        const c = v / 255;
        return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * channel(r ?? 0) + 0.7152 * channel(g ?? 0) + 0.0722 * channel(b ?? 0);
    };
    const backgroundOf = (el: any): number[] => {
      for (let at = el; at !== null; at = at.parentElement) {
        const bg = rgba(getComputedStyle(at).backgroundColor);
        if ((bg[3] ?? 1) > 0) return bg;
      }
      return [255, 255, 255];
    };
    const checked = new Set<any>();
    for (const { node } of fragments) {
      const el = node.parentElement;
      if (checked.has(el) || el.closest(':disabled') !== null) continue;
      checked.add(el);
      const s = getComputedStyle(el);
      const [fg, bg] = [luminance(rgba(s.color)), luminance(backgroundOf(el))];
      const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
      const size = parseFloat(s.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(s.fontWeight) >= 700);
      if (ratio < (large ? 3 : 4.5)) {
        problems.push(
          `${name(el)} has a contrast of ${ratio.toFixed(2)}:1 (${s.color} on rgb(${backgroundOf(el).slice(0, 3).join(', ')}))`,
        );
      }
    }
    // 8. Text that runs into other text (a header over the next, a number over its neighbour).
    for (let i = 0; i < fragments.length; i++) {
      const a = fragments[i]!;
      for (let j = i + 1; j < fragments.length; j++) {
        const b = fragments[j]!;
        if (a.node === b.node) continue;
        const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (x > 1 && y > 1) {
          problems.push(
            `"${(a.node.textContent ?? '').trim().slice(0, 30)}" (${name(a.node.parentElement)}) runs into ` +
              `"${(b.node.textContent ?? '').trim().slice(0, 30)}" (${name(b.node.parentElement)})`,
          );
        }
      }
    }
    return [...new Set(problems)];
  });
}

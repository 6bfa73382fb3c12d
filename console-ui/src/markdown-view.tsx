// An assistant answer rendered as markdown, safely: markdown-it with `html: false` escapes any raw HTML and
// refuses javascript:/vbscript:/file: links; images are off, so an answer cannot make the page fetch anything.
import MarkdownIt from 'markdown-it';
import { useMemo } from 'preact/hooks';

const md = new MarkdownIt({ html: false, linkify: true, breaks: false });
md.disable('image');
// Links leave the console in a new tab and tell the target nothing about it.
const defaultLinkOpen = md.renderer.rules.link_open;
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  token?.attrSet('target', '_blank');
  token?.attrSet('rel', 'noopener noreferrer nofollow');
  return defaultLinkOpen !== undefined
    ? defaultLinkOpen(tokens, idx, options, env, self)
    : self.renderToken(tokens, idx, options);
};

export function renderMarkdown(text: string): string {
  return md.render(text).trim();
}

export function MarkdownView(props: { text: string; class?: string; testId?: string }) {
  const html = useMemo(() => renderMarkdown(props.text), [props.text]);
  // Safe: markdown-it produced this from the text with raw HTML escaped and unsafe link schemes refused.
  return (
    <div
      class={`markdown ${props.class ?? ''}`}
      data-testid={props.testId}
      dangerouslySetInnerHTML={{ __html: html }}
    />
  );
}

// Reads Markdown the way GitHub renders it, for the two things the docs checks need: the anchors its headings
// get and the relative links it holds. Fenced code blocks are skipped (a `# workerless.yaml` comment in a YAML
// block is not a heading), and so is inline code (`[a](b)` between backticks is not a link).

/** One relative link: its 1-based line and its target as written (`docs/x.md#y`, `#y`, `deploy/`). */
export interface MarkdownLink {
  readonly line: number;
  readonly target: string;
}

/** GitHub's anchor for a heading's text (as github-slugger makes it): lower case, punctuation dropped, spaces to hyphens. */
export function headingSlug(text: string): string {
  return text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/**
 * Every anchor the page's headings get (a repeated heading gets `-1`, `-2` ... as on GitHub), and those an HTML
 * `<a id="x">` or `<a name="x">` in the prose sets, which GitHub also scrolls to (for a place inside a paragraph).
 */
export function headingAnchors(markdown: string): ReadonlySet<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text } of proseLines(markdown)) {
    for (const a of text.replace(/(`+)[\s\S]*?\1/g, '').matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(a[1] ?? '');
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(text);
    if (heading === null) continue;
    const base = headingSlug(heading[1] ?? '');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The page's links that stay in this repository (no scheme such as https: or mailto:). */
export function relativeLinks(markdown: string): readonly MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const { line, text } of proseLines(markdown)) {
    const outsideCode = text.replace(/(`+)[\s\S]*?\1/g, '');
    for (const match of outsideCode.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1] ?? '';
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ line, target });
    }
  }
  return links;
}

/** The lines outside fenced code blocks (``` or ~~~, indented too, as inside a list item). */
function proseLines(markdown: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((text, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(text)?.[1];
    if (fence === undefined) {
      if (marker !== undefined) fence = marker;
      else out.push({ line: i + 1, text });
    } else if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length && text.trim() === marker) {
      fence = undefined;
    }
  });
  return out;
}

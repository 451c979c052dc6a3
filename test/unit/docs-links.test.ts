// Every relative link of the project's Markdown pages resolves: the file or folder exists, and an anchor names a
// heading of its page. The README's manual moved to docs/ (issue 21); this keeps links into it from rotting.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { headingAnchors, relativeLinks } from '../../scripts/lib/markdown-links.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The pages people read: the README, CONTRIBUTING.md, docs/, and the READMEs of deploy/, bench/ and examples/. */
function pages(): string[] {
  const found = ['README.md', 'CONTRIBUTING.md'];
  const walk = (dir: string, keep: (name: string) => boolean): void => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path, keep);
      else if (keep(entry.name)) found.push(path);
    }
  };
  walk('docs', (name) => name.endsWith('.md'));
  for (const dir of ['deploy', 'bench', 'examples']) walk(dir, (name) => name === 'README.md');
  return found;
}

/** What is wrong with each link of `page` (a path from the root), as `page:line: target: problem`. */
function brokenLinks(page: string, read: (path: string) => string | undefined): string[] {
  const text = read(page);
  if (text === undefined) return [`${page}: missing`];
  const problems: string[] = [];
  for (const { line, target } of relativeLinks(text)) {
    const [pathPart = '', anchor] = target.split('#', 2);
    const path = pathPart === '' ? page : normalize(join(dirname(page), decodeURIComponent(pathPart)));
    const where = `${page}:${line}: ${target}`;
    if (path.startsWith('..')) problems.push(`${where}: leaves the repository`);
    else if (pathPart !== '' && read(path) === undefined && !existsSync(join(ROOT, path))) problems.push(`${where}: no such file`);
    else if (anchor !== undefined && path.endsWith('.md')) {
      const target = read(path);
      if (target === undefined) problems.push(`${where}: no such file`);
      else if (!headingAnchors(target).has(anchor)) problems.push(`${where}: no heading with that anchor in ${path}`);
    }
  }
  return problems;
}

/**
 * The repository paths a page names in inline code (`src/settle/fifo-rule.ts`, `test/integration/`) that do not
 * exist. The docs name each step by its file, so a file renamed without its docs fails here. A path followed by
 * ` †` is one a parallel branch is creating (docs/architecture.md) and is not checked.
 */
function missingPaths(page: string, text: string, exists: (path: string) => boolean): string[] {
  const problems: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const match of line.matchAll(/`((?:src|test|bench|scripts|deploy|config|docker|localstack|examples)\/[\w./-]*)`( †)?/g)) {
      const path = match[1] ?? '';
      if (match[2] === undefined && !path.includes('*') && !exists(path)) problems.push(`${page}:${i + 1}: ${path}: no such file`);
    }
  });
  return problems;
}

function readFromDisk(path: string): string | undefined {
  const full = join(ROOT, path);
  return existsSync(full) && statSync(full).isFile() ? readFileSync(full, 'utf8') : undefined;
}

describe('the links of the Markdown pages', () => {
  it('resolve: every linked file exists, every anchor is a heading of its page', () => {
    const list = pages();
    assert.ok(list.includes('docs/configuration.md') && list.includes('deploy/README.md'), list.join(', '));
    assert.deepEqual(
      list.flatMap((page) => brokenLinks(page, readFromDisk)),
      [],
    );
  });

  it('name only files that exist, in inline code too', () => {
    const exists = (path: string): boolean => existsSync(join(ROOT, path));
    assert.deepEqual(
      pages().flatMap((page) => missingPaths(page, readFromDisk(page) ?? '', exists)),
      [],
    );
    assert.deepEqual(missingPaths('x.md', 'see `src/main.ts`, `src/gone.ts`, `src/next.ts` † and `localstack/localstack:4.13`', exists), [
      'x.md:1: src/gone.ts: no such file',
    ]);
  });

  it('are refused when the file, the anchor or the page is wrong', () => {
    const files: Record<string, string> = {
      'README.md': '# workerless\n\n## Two commands\n\n```sh\n# not a heading\n```\n',
      'docs/a.md': [
        '# A',
        '## `--aws-client sdk`',
        '[ok](#--aws-client-sdk) [ok](../README.md#two-commands) [ok](a.md)',
        '[bad](#nope) [bad](../README.md#not-a-heading) [bad](missing.md) [bad](../../outside.md)',
        '`[code](#not-a-link)` [web](https://example.com/#x)',
        '<a id="in-prose"></a>A place in a paragraph: [ok](#in-prose) `<a id="in-code">` [bad](#in-code)',
      ].join('\n'),
    };
    const read = (path: string): string | undefined => files[path] ?? readFromDisk(path);
    assert.deepEqual(brokenLinks('docs/a.md', read), [
      'docs/a.md:4: #nope: no heading with that anchor in docs/a.md',
      'docs/a.md:4: ../README.md#not-a-heading: no heading with that anchor in README.md',
      'docs/a.md:4: missing.md: no such file',
      'docs/a.md:4: ../../outside.md: leaves the repository',
      'docs/a.md:6: #in-code: no heading with that anchor in docs/a.md',
    ]);
  });
});

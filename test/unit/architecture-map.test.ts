// docs/architecture.md stays true to src/ (issue 39, "A map that stays true"): every file it names exists where it
// says, and its table names every file of the four step folders. The page states the convention at its top: a
// file is named with its folder, from the root (`src/receive/receiver.ts`) or, in the diagrams, from src/
// (`receive/receiver.ts`); a bare `receiver.ts` is refused, since it says nothing of where the file is.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGE = 'docs/architecture.md';
/** The folders of a message's path, whose every file the table names. */
const STEP_FOLDERS = ['receive', 'invoke', 'settle', 'dispatch'];

/** A `src/` path (a file or a folder), or a `.ts` file name with or without its folders, as the page writes them. */
const NAMED = /(?<![\w./-])(src\/[\w./-]*|(?:[\w.-]+\/)*[\w.-]+\.ts)(?![\w/-])/g;

/**
 * What is wrong with the map `text`, as `line N: name: problem` or `path: problem`: a `src/` path that does not
 * exist, a `folder/file.ts` that exists neither from the root nor from src/, a bare file name, and a file of
 * `stepFiles` (paths from the root) that no table row of the page names.
 */
function mapProblems(text: string, exists: (path: string) => boolean, stepFiles: readonly string[]): string[] {
  const problems: string[] = [];
  const inTable = new Set<string>();
  text.split('\n').forEach((line, i) => {
    for (const match of line.matchAll(NAMED)) {
      // A sentence may end on a path: its full stop is not part of it.
      const name = (match[1] ?? '').replace(/\.$/, '');
      const where = `line ${i + 1}: ${name}`;
      if (name.startsWith('src/')) {
        if (!exists(name)) problems.push(`${where}: no such file or folder`);
      } else if (!name.includes('/')) {
        problems.push(`${where}: a bare file name; write it with its folder`);
      } else if (!exists(name) && !exists(`src/${name}`)) {
        problems.push(`${where}: no such file (from the root or from src/)`);
      }
      if (line.startsWith('|')) inTable.add(name.startsWith('src/') ? name : `src/${name}`);
    }
  });
  for (const file of stepFiles) if (!inTable.has(file)) problems.push(`${file}: not named in the table`);
  return problems;
}

/** The .ts files directly in the step folders, as paths from the root. */
function stepFilesOnDisk(): string[] {
  return STEP_FOLDERS.flatMap((folder) =>
    readdirSync(join(ROOT, 'src', folder), { withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
      .map((entry) => `src/${folder}/${entry.name}`),
  );
}

const onDisk = (path: string): boolean => existsSync(join(ROOT, path));

describe('docs/architecture.md', () => {
  const page = readFileSync(join(ROOT, PAGE), 'utf8');
  const files = stepFilesOnDisk();

  it('names only files that exist, and every file of src/receive/, src/invoke/, src/settle/ and src/dispatch/', () => {
    assert.ok(files.includes('src/receive/receiver.ts') && files.includes('src/dispatch/batch.ts'), files.join(', '));
    assert.ok(files.length > 40, `${files.length} step files`);
    assert.deepEqual(mapProblems(page, onDisk, files), []);
  });

  it('is refused when it names a file that is gone, moved, or written without its folder', () => {
    const planted = [
      page,
      'The call itself: `src/invoke/lambda-invoker.ts`.',
      '```mermaid',
      '  LEASE["the lease<br/>settle/queue-visibility.ts"]',
      '  CALL["the call<br/>lambda-http-invoker.ts"]',
      '```',
      'Still right: `src/dispatch/queue-visibility.ts`, dispatch/queue-visibility.ts, `bench/fast.ts`, `src/receive/`.',
    ].join('\n');
    const last = page.split('\n').length;
    assert.deepEqual(mapProblems(planted, onDisk, files), [
      `line ${last + 1}: src/invoke/lambda-invoker.ts: no such file or folder`,
      `line ${last + 3}: settle/queue-visibility.ts: no such file (from the root or from src/)`,
      `line ${last + 4}: lambda-http-invoker.ts: a bare file name; write it with its folder`,
    ]);
  });

  it('is refused when a file of a step folder is not in the table, even if the page names it elsewhere', () => {
    const exists = (path: string): boolean => path === 'src/receive/new-step.ts' || onDisk(path);
    const planted = `${page}\nA new step: \`src/receive/new-step.ts\`.`;
    assert.deepEqual(mapProblems(planted, exists, [...files, 'src/receive/new-step.ts']), [
      'src/receive/new-step.ts: not named in the table',
    ]);
    // Named in a row of the table, it is covered, by its path from the root or from src/.
    for (const name of ['`src/receive/new-step.ts`', 'receive/new-step.ts']) {
      assert.deepEqual(
        mapProblems(`${page}\n| 3 new | ${name} | a new policy | pure |`, exists, [...files, 'src/receive/new-step.ts']),
        [],
      );
    }
  });
});

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { optionsTable, syncReadme } from '../../../scripts/docs-options.ts';
import { CORE_OPTIONS, OPTIONS, envName } from '../../../src/config/options.ts';

const README = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

describe('the README options tables', () => {
  it('are what src/config/options.ts defines (run npm run docs:options after changing an option)', () => {
    // Compared line by line so that a failure names the row that differs.
    assert.deepEqual(README.split('\n'), syncReadme(README).split('\n'));
  });

  it('list every option once', () => {
    for (const d of OPTIONS) {
      assert.equal(README.split(`| \`--${d.flag}\` | \`${envName(d.flag)}\` |`).length, 2, `--${d.flag}`);
    }
  });

  it("show each row's flag, env var, default and range", () => {
    const table = optionsTable(CORE_OPTIONS);
    assert.ok(
      table.includes('| `--concurrency` | `WORKERLESS_CONCURRENCY` | `10` | 1-10000 | worker loops = most concurrent invocations |'),
      table,
    );
    assert.ok(table.includes('| `--delete` | `WORKERLESS_DELETE` | `on-success` | `on-success`, `never` |'), table);
    assert.ok(table.includes('| `--retry-backoff-max` | `WORKERLESS_RETRY_BACKOFF_MAX` | `15m` | 1s-720m |'), table);
  });

  it('a changed definition makes the README stale', () => {
    const stale = README.replace(
      '| `--concurrency` | `WORKERLESS_CONCURRENCY` | `10` |',
      '| `--concurrency` | `WORKERLESS_CONCURRENCY` | `12` |',
    );
    assert.notEqual(stale, README);
    assert.notEqual(syncReadme(stale), stale);
  });
});

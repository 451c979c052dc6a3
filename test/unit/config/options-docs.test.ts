import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { optionsTable, readOptionsPage, readOtherPages, syncOptionTables } from '../../../scripts/docs-options.ts';
import { CORE_OPTIONS, OPTIONS, envName } from '../../../src/config/options.ts';

const PAGE = readOptionsPage();
const OTHERS = readOtherPages();

describe('the options tables of docs/configuration.md', () => {
  it('are what src/config/options.ts defines (run npm run docs:options after changing an option)', () => {
    // Compared line by line so that a failure names the row that differs.
    assert.deepEqual(PAGE.split('\n'), syncOptionTables(PAGE, OTHERS).split('\n'));
  });

  it('list every option once', () => {
    for (const d of OPTIONS) {
      assert.equal(PAGE.split(`| \`--${d.flag}\` | \`${envName(d.flag)}\` |`).length, 2, `--${d.flag}`);
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

  it('a changed definition makes the page stale', () => {
    const stale = PAGE.replace(
      '| `--concurrency` | `WORKERLESS_CONCURRENCY` | `10` |',
      '| `--concurrency` | `WORKERLESS_CONCURRENCY` | `12` |',
    );
    assert.notEqual(stale, PAGE);
    assert.notEqual(syncOptionTables(stale, OTHERS), stale);
  });

  it("point an option's link to a section at the page that holds it, and keep the page's own sections local", () => {
    const page =
      '# Configuration\n\n## Options\n\n<!-- options:begin main -->\n<!-- options:end main -->\n<!-- options:begin temporal -->\n<!-- options:end temporal -->\n';
    const synced = syncOptionTables(page, new Map([['delivery.md', '# Delivery\n\n## Priority\n\n## Delete modes\n']]));
    // --queues links to #priority (in delivery.md here); --delete to #delete-modes.
    assert.ok(synced.includes('see [Priority](delivery.md#priority)'), synced);
    assert.ok(synced.includes('[Delete modes](delivery.md#delete-modes)'), synced);
    // A section on the page itself keeps its bare anchor.
    const local = syncOptionTables(`${page}\n## Priority\n`, new Map([['delivery.md', '## Priority\n']]));
    assert.ok(local.includes('see [Priority](#priority)'), local);
  });
});

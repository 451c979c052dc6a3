// `workerless migrate`'s flags: every invalid one named with its value, all at once (exit 2 in run-migrate.ts).
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { MIGRATE_FLAGS, MIGRATE_HELP, parseMigrateArgs } from '../../../src/migrate/migrate-options.ts';

const problems = (...argv: string[]) => {
  const args = parseMigrateArgs(argv);
  return 'problems' in args ? args.problems : [];
};

describe('parseMigrateArgs', () => {
  it('reads the function, the region, the endpoint and the action', () => {
    assert.deepEqual(
      parseMigrateArgs(['--function', 'orders-fn:live', '--region', 'eu-west-1', '--endpoint-url', 'http://127.0.0.1:4566']),
      {
        help: false,
        options: {
          functionName: 'orders-fn:live',
          region: 'eu-west-1',
          endpointUrl: 'http://127.0.0.1:4566',
          action: 'print',
          readyUrl: undefined,
          readyTimeoutMs: 300_000,
          partial: false,
        },
      },
    );
    const cutover = parseMigrateArgs([
      '--function',
      'f',
      '--cutover',
      '--ready-url',
      'http://10.0.0.5:8080/readyz',
      '--ready-timeout',
      '90s',
    ]);
    assert.ok('options' in cutover);
    assert.deepEqual(
      [cutover.options.action, cutover.options.readyUrl, cutover.options.readyTimeoutMs],
      ['cutover', 'http://10.0.0.5:8080/readyz', 90_000],
    );
    const partial = parseMigrateArgs(['--function', 'f', '--cutover', '--ready-url', 'http://h/readyz', '--partial']);
    assert.ok('options' in partial && partial.options.partial);
    const rollback = parseMigrateArgs(['--function', 'f', '--rollback']);
    assert.ok('options' in rollback && rollback.options.action === 'rollback');
    assert.deepEqual(parseMigrateArgs(['-h']), { help: true });
  });

  it('names each bad flag with its value, through the daemon option definitions where they are shared', () => {
    assert.deepEqual(problems('--function', 'not a function'), [
      '--function must be a function name, name:alias or function ARN, got "not a function"',
    ]);
    assert.deepEqual(problems(), ['--function is required: the function whose SQS event source mappings to migrate']);
    assert.deepEqual(problems('--function', 'f', '--endpoint-url', 'ftp://x'), ['--endpoint-url must be an http(s) URL, got "ftp://x"']);
    assert.deepEqual(problems('--function', 'f', '--queues', 'a'), ['unknown option --queues (see workerless migrate --help)']);
    assert.deepEqual(problems('--function', 'f', '--cutover'), [
      '--cutover needs --ready-url: the /readyz of the workerless run that takes over',
    ]);
    assert.deepEqual(problems('--function', 'f', '--cutover', '--rollback', '--ready-url', 'x'), [
      '--cutover and --rollback are opposites: give one',
      '--ready-url must be an http(s) URL, got "x"',
    ]);
    assert.deepEqual(problems('--function', 'f', '--cutover', '--ready-url', 'http://h/readyz', '--ready-timeout', '2h'), [
      '--ready-timeout must be a duration from 1s to 1h (such as 90s or 5m), got "2h"',
    ]);
    assert.deepEqual(problems('--function', 'f', '--ready-url', 'http://h/readyz'), ['--ready-url goes with --cutover']);
    assert.deepEqual(problems('--function', 'f', '--rollback', '--partial'), ['--partial goes with --cutover']);
    assert.deepEqual(problems('--function', 'f', 'extra'), ['unexpected argument "extra" (options take the form --name value)']);
  });
});

describe('the flags in --help and docs/migrate.md', () => {
  it('lists every flag in both', async () => {
    const page = await readFile(new URL('../../../docs/migrate.md', import.meta.url), 'utf8');
    for (const flag of MIGRATE_FLAGS) {
      assert.match(MIGRATE_HELP, new RegExp(`--${flag}\\b`), `--${flag} in --help`);
      assert.ok(page.includes(`| \`--${flag}\` |`), `--${flag} in the table of docs/migrate.md`);
    }
  });
});

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../../src/config/config.ts';

const DEFS = OPTIONS;
const path = (name: string) => fileURLToPath(new URL(`../../../config/${name}`, import.meta.url));

function problemsFor(argv: string[], env: Record<string, string>) {
  const cli = collectOptions(argv, env, DEFS);
  const r = resolveConfig(cli.raw, env);
  return [...cli.problems, ...(r.ok ? [] : r.problems), ...cli.warnings];
}

describe('the example configs in config/ are valid', () => {
  for (const file of ['workerless.yaml', 'workerless.json']) {
    it(file, () => assert.deepEqual(problemsFor(['--config', path(file)], { AWS_REGION: 'us-east-1' }), []));
  }
  it('workerless.env', () => {
    const env = Object.fromEntries(
      readFileSync(path('workerless.env'), 'utf8')
        .split('\n')
        .filter((l) => /^[A-Z_]+=/.test(l))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    assert.deepEqual(problemsFor([], env), []);
  });
});

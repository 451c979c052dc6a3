// workerless check: a queue with a failure destination needs a redrive policy or --max-attempts (issue 23).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatReport, runChecks, type CheckPorts } from '../../../src/check/check.ts';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig, type Config } from '../../../src/config/config.ts';
import type { ResolvedQueue } from '../../../src/aws/sqs-source.ts';
import { ok } from '../../support/factories.ts';

const DEST = 'https://sqs.us-east-1.amazonaws.com/123456789012/failures';

function config(argv: string[]): Config {
  const env = { AWS_REGION: 'us-east-1' };
  const r = resolveConfig(collectOptions(['--metrics', 'off', '--function', 'fn', ...argv], env, OPTIONS).raw, env);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.config;
}

/** Queues named `redriven*` have a RedrivePolicy with maxReceiveCount 4; the others none. */
const ports: CheckPorts = {
  resolveQueue: (spec) => {
    const q: ResolvedQueue = {
      name: spec.ref,
      url: `http://sqs/${spec.ref}`,
      arn: `arn:aws:sqs:us-east-1:1:${spec.ref}`,
      region: 'us-east-1',
      fifo: false,
      visibilityTimeoutSec: 30,
      weight: 1,
      ...(spec.ref.startsWith('redriven') ? { maxReceiveCount: 4 } : {}),
    };
    return Promise.resolve(q);
  },
  dryRun: () => Promise.resolve(ok()),
  putCheckDatum: () => Promise.resolve(),
  connectTemporal: () => Promise.reject(new Error('unused')),
  probeTcp: () => Promise.resolve(undefined),
};

const destinationLines = async (argv: string[]) =>
  formatReport(await runChecks(config(argv), ports)).filter((l) => l.includes('failure destination'));

describe('workerless check: failure destination', () => {
  it('reports the receive a message leaves at, from the redrive policy or --max-attempts; FAIL with neither', async () => {
    assert.deepEqual(await destinationLines(['--queues', 'redriven,bare', '--failure-destination', DEST]), [
      `ok   failure destination of queue redriven (${DEST}, after 4 receives (its maxReceiveCount); sqs:SendMessage not checked)`,
      'FAIL failure destination of queue bare: has a failure destination but no redrive policy: give it a RedrivePolicy (maxReceiveCount) or set --max-attempts',
    ]);
    assert.deepEqual(await destinationLines(['--queues', 'bare', '--failure-destination', DEST, '--max-attempts', '3']), [
      `ok   failure destination of queue bare (${DEST}, after 3 receives (--max-attempts); sqs:SendMessage not checked)`,
    ]);
  });

  it('nothing to report without a failure destination', async () => {
    assert.deepEqual(await destinationLines(['--queues', 'bare']), []);
  });
});

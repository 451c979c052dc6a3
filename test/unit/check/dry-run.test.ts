// One reading of a DryRun's answer (src/check/dry-run.ts) for both paths that make it: `workerless check` prints
// its line, and the daemon's start-up throws a StartupError with the same line when it fails (`FAIL <message>` is
// the check's line) and starts when it passes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import type { AwsAdapters } from '../../../src/aws/adapters.ts';
import type { AwsEndpoints } from '../../../src/aws/endpoints.ts';
import { formatReport, runChecks } from '../../../src/check/check.ts';
import type { CheckPorts } from '../../../src/check/check-ports.ts';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig, type Config } from '../../../src/config/config.ts';
import { StartupError } from '../../../src/core/errors.ts';
import type { FunctionInvoker, InvokeError, InvokeParams, InvokeResult } from '../../../src/core/function-invoker.ts';
import type { QueueLookup } from '../../../src/core/queue.ts';
import { runStartupChecks } from '../../../src/daemon/startup-checks.ts';
import { notSent, ok, throttled, unusable } from '../../support/factories.ts';

const LAMBDA = 'https://lambda.us-east-1.amazonaws.com';
const HINT = '(check --endpoint-url / --region and the network)';
const TENANT_HINT = '(if the function is in tenant isolation mode, set --tenant-id-from)';

function config(argv: string[]): Config {
  const env = { AWS_REGION: 'us-east-1' };
  const r = resolveConfig(collectOptions(['--function', 'f', '--queues', 'q', '--metrics', 'off', ...argv], env, OPTIONS).raw, env);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.config;
}

const failed = (error: InvokeError): InvokeResult => ({ ok: false, error });

const lookup: QueueLookup = {
  queueUrl: async (name) => `https://sqs.us-east-1.amazonaws.com/1/${name}`,
  queueAttributes: async () => ({ QueueArn: 'arn:aws:sqs:us-east-1:1:q', VisibilityTimeout: '30' }),
};

/** `workerless check`'s line for the function, the DryRun answering `outcome`. */
async function checkLine(c: Config, outcome: InvokeResult, sent: (InvokeParams | undefined)[]): Promise<string> {
  const ports: CheckPorts = {
    findQueues: async () => ({ found: [], unreadable: [] }),
    resolveQueue: async (spec) => ({
      name: spec.ref,
      url: 'u',
      arn: 'a',
      region: 'us-east-1',
      fifo: false,
      visibilityTimeoutSec: 30,
      weight: 1,
    }),
    dryRun: async (_fn, _signal, params) => (sent.push(params), outcome),
    functionConfiguration: () => Promise.reject(new Error('unused')),
    reservedConcurrency: async () => undefined,
    putCheckDatum: async () => {},
    connectTemporal: () => Promise.reject(new Error('unused')),
    probeTcp: async () => undefined,
    endpoints: { lambda: LAMBDA, cloudwatch: 'https://monitoring.us-east-1.amazonaws.com' },
  };
  const lines = formatReport(await runChecks(c, ports)).filter((l) => /^(ok {3}function f \(|FAIL function f: )/.test(l));
  assert.equal(lines.length, 1, lines.join('\n'));
  return lines[0]!;
}

/** The daemon's start-up, the DryRun answering `outcome`: undefined when it passes, else its StartupError's message. */
async function startupMessage(c: Config, outcome: InvokeResult, sent: (InvokeParams | undefined)[]): Promise<string | undefined> {
  const invoker: FunctionInvoker = {
    invoke: () => Promise.reject(new Error('unused')),
    dryRun: async (_signal, params) => (sent.push(params), outcome),
  };
  const aws = { sqs: lookup, invoker: () => invoker } as unknown as AwsAdapters;
  const endpoints = { sqs: { url: new URL('https://sqs.us-east-1.amazonaws.com'), custom: false } } as AwsEndpoints;
  try {
    await runStartupChecks(c, endpoints, aws, LAMBDA, new AbortController(), pino({ level: 'silent' }));
    return undefined;
  } catch (err) {
    assert.ok(err instanceof StartupError);
    return err.message;
  }
}

const cases: { outcome: string; answer: InvokeResult; tenant?: true; line: string }[] = [
  { outcome: 'allowed', answer: ok(), line: 'ok   function f (DryRun invoke allowed)' },
  {
    outcome: 'allowed, naming the tenant',
    answer: ok(),
    tenant: true,
    line: 'ok   function f (DryRun invoke allowed (tenant workerless-dry-run))',
  },
  {
    outcome: 'throttled: it exists',
    answer: throttled(),
    line: 'ok   function f (DryRun invoke throttled (TooManyRequestsException), which proves it exists and may be invoked)',
  },
  {
    outcome: 'missing',
    answer: failed({ kind: 'unusable', code: 'ResourceNotFoundException', message: 'Function not found', status: 404 }),
    line: 'FAIL function f: does not exist (ResourceNotFoundException)',
  },
  { outcome: 'unreachable', answer: notSent(), line: `FAIL function f: cannot reach Lambda at ${LAMBDA}: ECONNREFUSED ${HINT}` },
  { outcome: 'access denied', answer: unusable(), line: 'FAIL function f: cannot invoke: access denied (needs lambda:InvokeFunction)' },
  {
    outcome: 'credentials refused',
    answer: failed({ kind: 'unusable', code: 'UnrecognizedClientException', message: 'The security token is invalid.', status: 403 }),
    line: 'FAIL function f: cannot invoke: credentials refused (UnrecognizedClientException): The security token is invalid.',
  },
  {
    outcome: 'refused as an invalid parameter, no tenant sent: the tenant hint',
    answer: failed({ kind: 'rejected', code: 'InvalidParameterValueException', message: 'A tenant ID is required.\nmore', status: 400 }),
    line: `FAIL function f: cannot invoke: InvalidParameterValueException: A tenant ID is required. ${TENANT_HINT}`,
  },
  {
    outcome: 'refused as an invalid parameter, a tenant sent: no hint',
    answer: failed({ kind: 'rejected', code: 'InvalidParameterValueException', message: 'bad tenant', status: 400 }),
    tenant: true,
    line: 'FAIL function f: cannot invoke: InvalidParameterValueException: bad tenant',
  },
  {
    outcome: 'refused for another reason',
    answer: failed({ kind: 'unusable', code: 'KMSAccessDeniedException', message: 'cannot decrypt', status: 502 }),
    line: 'FAIL function f: cannot invoke: KMSAccessDeniedException: cannot decrypt',
  },
];

describe('the DryRun: one line for workerless check and the start-up', () => {
  for (const { outcome, answer, tenant, line } of cases) {
    it(outcome, async () => {
      const c = config(tenant ? ['--tenant-id-from', 'group', '--queues', 'q.fifo'] : []);
      const checkSent: (InvokeParams | undefined)[] = [];
      const startupSent: (InvokeParams | undefined)[] = [];
      const checked = await checkLine(c, answer, checkSent);
      const startup = await startupMessage(c, answer, startupSent);
      assert.equal(checked, line);
      // Start-up passes when the check's line does, and otherwise says the same line.
      assert.equal(startup === undefined ? undefined : `FAIL ${startup}`, line.startsWith('FAIL ') ? line : undefined);
      // Both send the same DryRun.
      assert.deepEqual(startupSent, checkSent);
      assert.deepEqual(checkSent, [tenant ? { tenantId: 'workerless-dry-run' } : undefined]);
    });
  }
});

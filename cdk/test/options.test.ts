// The daemon's options as props: generated from src/config/options.ts, and refused at synth exactly as the CLI refuses them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Token } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { OPTIONS } from '../../src/config/config.ts';
import { camel, defaultOf, envName, formatMs } from '../../src/config/options.ts';
import { SET_BY_CONSTRUCT } from '../src/daemon-environment.ts';
import { generate, GENERATED_PATH } from '../scripts/generate-options.ts';
import type { WorkerlessProps } from '../src/index.ts';
import { docsExample, testStack } from './support.ts';

const ENABLERS: Partial<WorkerlessProps> = {
  retryBackoff: '1s',
  adaptiveConcurrency: true,
  temporalWorkerSetMax: 10,
  fleetTable: {},
};

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

function environment(props: Partial<WorkerlessProps>, temporal = false): Record<string, unknown> {
  const stack = testStack();
  const temporalFunction = temporal
    ? lambda.Function.fromFunctionArn(stack, 'Worker', 'arn:aws:lambda:us-east-1:123456789012:function:worker:live')
    : undefined;
  docsExample(stack, { ...props, ...(temporalFunction !== undefined ? { temporalFunction, temporalTaskQueues: 'orders' } : {}) });
  const defs = Template.fromStack(stack).findResources('AWS::ECS::TaskDefinition');
  const container = (
    Object.values(defs)[0] as { Properties: { ContainerDefinitions: { Environment: { Name: string; Value: unknown }[] }[] } }
  ).Properties.ContainerDefinitions[0]!;
  return Object.fromEntries(container.Environment.map((e) => [e.Name, e.Value]));
}

/** What the daemon prints for these flags (exit code 2, one problem a line). */
function cliProblems(args: string[]): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, '--function', 'my-fn', '--queues', 'payments', '--region', 'us-east-1', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] },
  });
  return { status: r.status, stderr: r.stderr };
}

describe('the options', () => {
  it('are generated from src/config/options.ts: src/options.generated.ts is what `npm run generate` writes today', () => {
    assert.equal(readFileSync(GENERATED_PATH, 'utf8'), generate(), 'run `npm run generate` in cdk/');
  });

  it('are every daemon option: each one not set by the construct is a prop that reaches its WORKERLESS_* variable', () => {
    const set = new Set<string>(SET_BY_CONSTRUCT);
    const props: Record<string, unknown> = {};
    for (const d of OPTIONS) {
      const value = defaultOf(d.flag);
      // A duration's default is in milliseconds; the prop takes the CLI's "500ms", "5s", "10m".
      if (!set.has(camel(d.flag)) && value !== undefined) props[camel(d.flag)] = d.kind === 'duration' ? formatMs(value as number) : value;
    }
    // The options that others are "only used with".
    Object.assign(props, ENABLERS);
    assert.ok(Object.keys(props).length > 30, 'most options have a default to pass');
    const env = environment(props, true);
    for (const name of Object.keys(props))
      assert.ok(envName(OPTIONS.find((d) => camel(d.flag) === name)!.flag) in env, `${name} reaches the container`);
  });

  it('refuses an invalid value at synth with the prop, the flag and the words of the CLI', () => {
    const cli = cliProblems(['--concurrency', '0']);
    assert.equal(cli.status, 2);
    const line = /--concurrency must [^\n]*got "0"/.exec(cli.stderr)?.[0];
    assert.ok(line, cli.stderr);
    assert.throws(
      () => environment({ concurrency: 0 }),
      (err: Error) => err.message.includes(`concurrency: ${line}`),
    );
  });

  it("refuses what only the daemon's rules across options refuse (a batch above 10 without a batching window)", () => {
    const cli = cliProblems(['--batch-size', '20']);
    assert.equal(cli.status, 2);
    const problem = /--batch-size[^\n]*/.exec(cli.stderr)?.[0];
    assert.ok(problem, cli.stderr);
    assert.throws(
      () => environment({ batchSize: 20 }),
      (err: Error) => err.message.replace(/ \(from WORKERLESS_[A-Z_]+\)/g, '').includes(problem),
    );
    assert.equal(environment({ batchSize: 20, batchWindow: '2s' })['WORKERLESS_BATCH_WINDOW'], '2s');
  });

  it('reports every problem at once', () => {
    assert.throws(
      () => environment({ concurrency: 0, pollFor: 21, logLevel: 'loud' as 'info' }),
      (err: Error) => ['concurrency:', 'pollFor:', 'logLevel:'].every((p) => err.message.includes(p)),
    );
  });

  it('refuses an option the construct sets itself', () => {
    assert.throws(
      () => environment({ queuesPrefix: 'tenant-' } as Partial<WorkerlessProps>),
      /queuesPrefix is not an option the construct takes/,
    );
  });

  it('writes booleans as on/off and passes a token through unchecked (the daemon checks it when it starts)', () => {
    const env = environment({ metricsPerQueue: 'off', adaptiveConcurrency: true, concurrency: Token.asNumber({ Ref: 'Loops' }) });
    assert.equal(env['WORKERLESS_ADAPTIVE_CONCURRENCY'], 'on');
    assert.equal(env['WORKERLESS_METRICS_PER_QUEUE'], 'off');
    assert.deepEqual(env['WORKERLESS_CONCURRENCY'], { Ref: 'Loops' });
  });
});

// The container image, end to end: builds it with docker/build-image.sh (local base image, classic builder,
// no registry), then runs it the way users do, with only WORKERLESS_* and AWS_* variables, against host-mode
// LocalStack (SQS) and the project's Lambda endpoint, both on the host network.
//
//   node --test test/docker/image.test.ts
//
// Needs root (or a docker group) and the machine's apt/npm access; the first run builds the base image
// (~1 min), later runs reuse it. Prints image size, app layer size and start-up time.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { awsTestEnv, countMessages, createQueue, sendMessages } from '../support/aws.ts';
import { ensureLocalStack } from '../support/localstack.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { NODE_FLAGS } from '../../src/daemon/node-flags.ts';
import { docker, envArgs, megabytes, run } from './docker.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const IMAGE = process.env['WORKERLESS_TEST_IMAGE'] ?? 'workerless:test';
const RECORD = fileURLToPath(new URL('../fixtures/functions/record.mjs', import.meta.url));
const SLOW = fileURLToPath(new URL('../fixtures/functions/slow.mjs', import.meta.url));
const containers: string[] = [];
const { version: PACKAGE_VERSION, license: PACKAGE_LICENSE } = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as {
  version: string;
  license: string;
};

/** A container name unique to this run, removed in the final `after`. */
function containerName(purpose: string): string {
  const name = `workerless-test-${process.pid}-${purpose}`;
  containers.push(name);
  return name;
}

function note(line: string): void {
  process.stderr.write(`# ${line}\n`);
}

before(
  async () => {
    const build = await run('bash', [`${root}docker/build-image.sh`], {
      echo: process.env['WORKERLESS_TEST_VERBOSE'] === '1',
      timeoutMs: 20 * 60_000,
      env: { ...process.env, IMAGE },
    });
    assert.equal(build.code, 0, `docker/build-image.sh failed:\n${build.stdout.slice(-4000)}\n${build.stderr.slice(-4000)}`);
    note(`image build: ${(build.durationMs / 1000).toFixed(1)} s`);

    const imageBytes = Number(await docker(['image', 'inspect', '-f', '{{.Size}}', IMAGE]));
    // The app layers: package.json, production node_modules and dist/src, all under /app.
    // One du per path: a single du would count files under /app only once, for whichever path came first.
    const du = await docker([
      'run',
      '--rm',
      '--network',
      'host',
      '--entrypoint',
      'sh',
      IMAGE,
      '-c',
      'for path in /app /app/node_modules /app/dist; do du -sb "$path"; done',
    ]);
    const bytes: Record<string, number> = Object.fromEntries(
      du
        .split('\n')
        .map((line) => line.split('\t'))
        .map(([size, path]): [string, number] => [path ?? '', Number(size)]),
    );
    note(
      `image ${IMAGE}: ${megabytes(imageBytes)}; app ${megabytes(bytes['/app'] ?? NaN)} ` +
        `(node_modules ${megabytes(bytes['/app/node_modules'] ?? NaN)}, dist ${megabytes(bytes['/app/dist'] ?? NaN)})`,
    );
  },
  { timeout: 21 * 60_000 },
);

after(async () => {
  for (const name of containers) await run('docker', ['rm', '-f', name]);
});

describe('the image without AWS', () => {
  test('reports an invalid WORKERLESS_* value and exits 2', async () => {
    const result = await run(
      'docker',
      [
        'run',
        '--rm',
        '--network',
        'host',
        ...envArgs({ WORKERLESS_CONCURRENCY: 'abc', WORKERLESS_FUNCTION: 'f', WORKERLESS_QUEUES: 'q' }),
        IMAGE,
      ],
      { timeoutMs: 60_000 },
    );
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /WORKERLESS_CONCURRENCY|--concurrency/);
    assert.match(result.stderr, /"abc"/);
  });

  test('--help lists the options with their environment variables and exits 0', async () => {
    const result = await run('docker', ['run', '--rm', '--network', 'host', IMAGE, '--help'], { timeoutMs: 60_000 });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Usage: workerless/);
    assert.match(result.stdout, /--concurrency/);
    assert.match(result.stdout, /WORKERLESS_CONCURRENCY/);
  });

  test('every production dependency loads from the pruned node_modules', async () => {
    // The Dockerfile deletes .ts/.map/.md files from node_modules; this proves nothing needed went with them.
    const script = `
      const { dependencies } = JSON.parse(await (await import('node:fs/promises')).readFile('/app/package.json', 'utf8'));
      for (const name of Object.keys(dependencies)) await import(name);
      console.log(Object.keys(dependencies).length);`;
    const result = await run(
      'docker',
      ['run', '--rm', '--network', 'host', '-w', '/app', '--entrypoint', 'node', IMAGE, '--input-type=module', '-e', script],
      { timeoutMs: 60_000 },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.ok(Number(result.stdout) > 0);
  });

  test('carries no package manager: npm, npx, corepack and yarn are gone, node stays', async () => {
    const script =
      'for c in npm npx corepack yarn yarnpkg; do command -v "$c" || true; done; ls -A /usr/local/lib/node_modules /opt 2>/dev/null; node --version';
    const out = await docker(['run', '--rm', '--network', 'host', '--entrypoint', 'sh', IMAGE, '-c', script]);
    // Only `ls` headers of empty folders (or nothing) and the node version: no command found, no module left.
    const lines = out.split('\n').filter((l) => l.trim() !== '' && !l.endsWith(':'));
    assert.equal(lines.length, 1, out);
    assert.match(lines[0] ?? '', /^v24\./, out);
  });

  test('carries the OCI labels, and prints the version it is labelled with', async () => {
    const labels = JSON.parse(await docker(['image', 'inspect', '-f', '{{json .Config.Labels}}', IMAGE])) as Record<string, string>;
    const oci = (name: string): string | undefined => labels[`org.opencontainers.image.${name}`];
    // docker/build-image.sh passes package.json's version and the checkout's HEAD, as the release workflow does.
    assert.equal(oci('version'), PACKAGE_VERSION);
    assert.equal(oci('revision'), (await run('git', ['-C', root, 'rev-parse', 'HEAD'])).stdout.trim());
    assert.equal(oci('created'), (await run('git', ['-C', root, 'log', '-1', '--format=%cI'])).stdout.trim());
    assert.equal(oci('source'), 'https://github.com/workerless/workerless');
    assert.equal(oci('licenses'), PACKAGE_LICENSE);
    assert.equal(oci('title'), 'workerless');

    const version = await run('docker', ['run', '--rm', '--network', 'host', IMAGE, '--version'], { timeoutMs: 60_000 });
    assert.equal(version.code, 0, version.stderr);
    assert.equal(version.stdout, `${PACKAGE_VERSION}\n`);
  });

  test("will not build with a VERSION other than package.json's", { timeout: 10 * 60_000 }, async () => {
    // What a release from a tag that does not match package.json would do; the stages before the check come from
    // the cache of the build above, so this takes seconds.
    const build = await run('bash', [`${root}docker/build-image.sh`, '--build-arg', 'VERSION=999.0.0'], {
      timeoutMs: 10 * 60_000,
      env: { ...process.env, IMAGE: `${IMAGE}-wrong-version` },
    });
    assert.notEqual(build.code, 0, 'the build with VERSION=999.0.0 succeeded');
    assert.match(
      build.stdout + build.stderr,
      new RegExp(`VERSION build argument "999\\.0\\.0" is not package\\.json version "${PACKAGE_VERSION.replaceAll('.', '\\.')}"`),
    );
    const image = await run('docker', ['image', 'inspect', `${IMAGE}-wrong-version`]);
    assert.notEqual(image.code, 0, 'an image was tagged anyway');
  });

  test('runs as the unprivileged node user with tini as PID 1', async () => {
    const config = JSON.parse(await docker(['image', 'inspect', '-f', '{{json .Config}}', IMAGE])) as {
      User: string;
      Entrypoint: string[];
      StopSignal?: string;
    };
    assert.equal(config.User, 'node');
    assert.deepEqual(config.Entrypoint.slice(0, 2), ['/usr/bin/tini', '--']);
    assert.equal(config.StopSignal, 'SIGTERM');
    assert.equal(await docker(['run', '--rm', '--network', 'host', '--entrypoint', 'id', IMAGE, '-u']), '1000');
  });
});

describe('the image against LocalStack and a Lambda endpoint', () => {
  let endpoint: LambdaEndpoint;

  before(
    async () => {
      const started = await run('bash', [`${root}localstack/localstack.sh`, 'start'], { timeoutMs: 10 * 60_000 });
      assert.equal(started.code, 0, `localstack.sh start failed:\n${started.stderr.slice(-4000)}`);
      await ensureLocalStack();
      endpoint = await startLambdaEndpoint({
        functions: {
          record: { handler: RECORD, timeoutSec: 30 },
          slow: { handler: SLOW, timeoutSec: 30 },
        },
      });
    },
    { timeout: 11 * 60_000 },
  );

  after(async () => {
    await endpoint?.stop();
  });

  /** The only configuration the container gets: WORKERLESS_* and AWS_* variables. */
  function containerEnv(functionName: string, queues: string, extra: Record<string, string> = {}): Record<string, string> {
    return {
      WORKERLESS_FUNCTION: functionName,
      WORKERLESS_QUEUES: queues,
      WORKERLESS_METRICS: 'off',
      WORKERLESS_POLL_FOR: '1',
      WORKERLESS_LOG_LEVEL: 'info',
      // Region, test credentials, SQS/CloudWatch at LocalStack, Lambda at the test endpoint.
      ...awsTestEnv({ lambdaEndpoint: endpoint.url }),
      ...extra,
    };
  }

  async function exitCode(name: string): Promise<number> {
    return Number(await docker(['inspect', '-f', '{{.State.ExitCode}}', name]));
  }

  test('dispatches queued messages to the function and deletes them', { timeout: 120_000 }, async () => {
    const high = await createQueue('docker-high');
    const low = await createQueue('docker-low');
    const bodies = Array.from({ length: 6 }, (_, i) => JSON.stringify({ n: i }));
    await sendMessages(high.url, bodies.slice(0, 3));
    await sendMessages(low.url, bodies.slice(3));

    const name = containerName('dispatch');
    const t0 = Date.now();
    await docker([
      'run',
      '-d',
      '--name',
      name,
      '--network',
      'host',
      ...envArgs(containerEnv('record', `${high.name},${low.name}`, { WORKERLESS_CONCURRENCY: '2' })),
      IMAGE,
    ]);
    await endpoint.waitFor((calls) => calls.filter((c) => c.functionName === 'record').length >= 1, 60_000);
    const firstInvokeMs = Date.now() - t0;
    await endpoint.waitFor((calls) => calls.filter((c) => c.functionName === 'record').length >= bodies.length, 60_000);

    const logs = await run('docker', ['logs', name]);
    const startedLine = logs.stdout.split('\n').find((line) => line.includes('"workerless started"'));
    assert.ok(startedLine, `no "workerless started" line in the logs:\n${logs.stdout}${logs.stderr}`);
    const startedAt = (JSON.parse(startedLine) as { time: number }).time;
    note(`start-up: "workerless started" ${startedAt - t0} ms after docker run; first invocation after ${firstInvokeMs} ms`);

    // The V8 flags it runs with, read from the running daemon (tini's child): the entrypoint's.
    const commandLines = await docker(['exec', name, 'sh', '-c', 'for p in /proc/[0-9]*; do tr "\\0" " " < "$p/cmdline"; echo; done']);
    const daemon = commandLines.split('\n').find((l) => l.startsWith('node ') && l.includes('/app/dist/src/main.js'));
    assert.equal(daemon?.trim(), `node ${NODE_FLAGS.join(' ')} /app/dist/src/main.js`, commandLines);

    const received = endpoint.invocations
      .filter((c) => c.functionName === 'record')
      .flatMap((c) => (c.payload as { Records: { body: string }[] }).Records.map((r) => r.body));
    assert.deepEqual([...received].sort(), [...bodies].sort());
    await waitUntil(
      async () => (await countMessages(high.url)) + (await countMessages(low.url)) === 0,
      30_000,
      'messages were not deleted after successful invocations',
    );

    const stop = await run('docker', ['stop', '-t', '20', name], { timeoutMs: 60_000 });
    assert.equal(stop.code, 0, stop.stderr);
    assert.equal(await exitCode(name), 0, (await run('docker', ['logs', name])).stdout);
  });

  test('docker stop lets in-flight invocations finish, deletes their messages and exits 0', { timeout: 120_000 }, async () => {
    const queue = await createQueue('docker-slow', { VisibilityTimeout: '60' });
    const bodies = Array.from({ length: 3 }, (_, i) => JSON.stringify({ sleepMs: 3000, n: i }));
    await sendMessages(queue.url, bodies);

    const name = containerName('stop');
    const seen = endpoint.invocations.length;
    await docker([
      'run',
      '-d',
      '--name',
      name,
      '--network',
      'host',
      ...envArgs(containerEnv('slow', queue.name, { WORKERLESS_CONCURRENCY: '3', WORKERLESS_SHUTDOWN_TIMEOUT: '15' })),
      IMAGE,
    ]);
    // All three are being processed (each sleeps 3 s) when the stop signal arrives.
    await endpoint.waitFor((calls) => calls.slice(seen).filter((c) => c.functionName === 'slow').length >= 3, 60_000);

    const stop = await run('docker', ['stop', '-t', '20', name], { timeoutMs: 60_000 });
    assert.equal(stop.code, 0, stop.stderr);
    note(`docker stop with 3 slow invocations in flight took ${stop.durationMs.toFixed(0)} ms`);
    const logs = await run('docker', ['logs', name]);
    assert.equal(await exitCode(name), 0, logs.stdout + logs.stderr);
    assert.ok(stop.durationMs < 15_000, `docker stop took ${stop.durationMs} ms: the signal did not reach node?`);

    const slow = endpoint.invocations.slice(seen).filter((c) => c.functionName === 'slow');
    assert.equal(slow.length, 3);
    for (const call of slow) assert.equal(call.status, 'success', `invocation ${call.requestId} ended as ${call.status}`);
    assert.match(logs.stdout, /stopped cleanly/);
    assert.equal(await countMessages(queue.url), 0, 'messages of completed invocations were not deleted');
  });
});

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, message: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(message);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

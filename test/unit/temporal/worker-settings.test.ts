import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pollingWindowMs, workerSettingsFromEnv } from '../../../examples/temporal-lambda-worker/settings.ts';

describe('example Lambda worker settings', () => {
  it('defaults to a 7 s shutdown buffer and a 5 s stop timeout (seed: 5 s stop + 2 s hooks)', () => {
    const s = workerSettingsFromEnv({ TEMPORAL_TASK_QUEUE: 'orders' });
    assert.equal(s.address, 'localhost:7233');
    assert.equal(s.namespace, 'default');
    assert.equal(s.taskQueue, 'orders');
    assert.equal(s.shutdownBufferMs, 7_000);
    assert.equal(s.stopTimeoutMs, 5_000);
    assert.equal(s.tls, undefined);
  });

  it('lets the event pick one of the configured task queues, and only those', () => {
    const env = { TEMPORAL_TASK_QUEUE: 'orders, refunds' };
    assert.equal(workerSettingsFromEnv(env, { taskQueue: 'refunds' }).taskQueue, 'refunds');
    assert.equal(workerSettingsFromEnv(env, { taskQueue: 'someone-elses' }).taskQueue, 'orders');
    assert.equal(workerSettingsFromEnv(env, {}).taskQueue, 'orders');
    assert.equal(workerSettingsFromEnv(env, null).taskQueue, 'orders');
  });

  it('enables TLS for Temporal Cloud API keys and mTLS', () => {
    assert.ok(workerSettingsFromEnv({ TEMPORAL_TASK_QUEUE: 'q', TEMPORAL_API_KEY: 'k' }).tls);
    const mtls = workerSettingsFromEnv({
      TEMPORAL_TASK_QUEUE: 'q',
      TEMPORAL_TLS_CLIENT_CERT_PATH: '/c.pem',
      TEMPORAL_TLS_CLIENT_KEY_PATH: '/k.pem',
    });
    assert.equal(mtls.tls?.clientCertPath, '/c.pem');
    assert.equal(workerSettingsFromEnv({ TEMPORAL_TASK_QUEUE: 'q', TEMPORAL_API_KEY: 'k', TEMPORAL_TLS: 'false' }).tls, undefined);
  });

  it('takes the version from the event workerless sends, and refuses one that contradicts the code', () => {
    const event = { taskQueue: 'q', deploymentName: 'orders', buildId: 'v2', startBy: 1_000 };
    const fromEvent = workerSettingsFromEnv({ TEMPORAL_TASK_QUEUE: 'q' }, event);
    assert.deepEqual(fromEvent.deployment, { deploymentName: 'orders', buildId: 'v2', behavior: 'AUTO_UPGRADE' });
    assert.equal(fromEvent.versionMismatch, undefined);
    assert.equal(fromEvent.startBy, 1_000);
    // Half a version in the event is no version.
    assert.equal(workerSettingsFromEnv({ TEMPORAL_TASK_QUEUE: 'q' }, { buildId: 'v2' }).deployment, undefined);
    const same = workerSettingsFromEnv(
      { TEMPORAL_TASK_QUEUE: 'q', TEMPORAL_DEPLOYMENT_NAME: 'orders', TEMPORAL_WORKER_BUILD_ID: 'v2' },
      event,
    );
    assert.equal(same.versionMismatch, undefined);
    const other = workerSettingsFromEnv(
      { TEMPORAL_TASK_QUEUE: 'q', TEMPORAL_DEPLOYMENT_NAME: 'orders', TEMPORAL_WORKER_BUILD_ID: 'v1' },
      event,
    );
    assert.equal(other.deployment?.buildId, 'v1', 'the code says what it is');
    assert.match(other.versionMismatch ?? '', /invoked for orders\/v2 but this code is orders\/v1/);
  });

  it('reads Worker Versioning settings, both or neither', () => {
    assert.equal(workerSettingsFromEnv({ TEMPORAL_TASK_QUEUE: 'q' }).deployment, undefined);
    assert.deepEqual(
      workerSettingsFromEnv({ TEMPORAL_TASK_QUEUE: 'q', TEMPORAL_DEPLOYMENT_NAME: 'orders', TEMPORAL_WORKER_BUILD_ID: 'v7' }).deployment,
      { deploymentName: 'orders', buildId: 'v7', behavior: 'AUTO_UPGRADE' },
    );
    assert.equal(
      workerSettingsFromEnv({
        TEMPORAL_TASK_QUEUE: 'q',
        TEMPORAL_DEPLOYMENT_NAME: 'o',
        TEMPORAL_WORKER_BUILD_ID: 'v',
        TEMPORAL_VERSIONING_BEHAVIOR: 'pinned',
      }).deployment?.behavior,
      'PINNED',
    );
    assert.throws(() => workerSettingsFromEnv({ TEMPORAL_TASK_QUEUE: 'q', TEMPORAL_DEPLOYMENT_NAME: 'orders' }), /must be set together/);
    assert.throws(
      () =>
        workerSettingsFromEnv({
          TEMPORAL_TASK_QUEUE: 'q',
          TEMPORAL_DEPLOYMENT_NAME: 'o',
          TEMPORAL_WORKER_BUILD_ID: 'v',
          TEMPORAL_VERSIONING_BEHAVIOR: 'x',
        }),
      /AUTO_UPGRADE or PINNED/,
    );
  });

  it('rejects a shutdown buffer that does not cover the stop timeout, and names every bad variable', () => {
    assert.throws(
      () =>
        workerSettingsFromEnv({ WORKER_SHUTDOWN_BUFFER_MS: '5000', WORKER_STOP_TIMEOUT_MS: '5000', TEMPORAL_TLS_CLIENT_CERT_PATH: '/c' }),
      (err: Error) =>
        /TEMPORAL_TASK_QUEUE/.test(err.message) &&
        /TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH/.test(err.message) &&
        /WORKER_SHUTDOWN_BUFFER_MS \(5000\) must exceed WORKER_STOP_TIMEOUT_MS \(5000\)/.test(err.message),
    );
    assert.throws(
      () => workerSettingsFromEnv({ TEMPORAL_TASK_QUEUE: 'q', WORKER_STOP_TIMEOUT_MS: 'soon' }),
      /WORKER_STOP_TIMEOUT_MS must be an integer/,
    );
  });

  it('polls until the deadline minus the shutdown buffer, never a negative time', () => {
    assert.equal(pollingWindowMs(900_000, 7_000), 893_000);
    assert.equal(pollingWindowMs(7_000, 7_000), 0);
    assert.equal(pollingWindowMs(3_000, 7_000), 0);
    assert.equal(pollingWindowMs(10_000.9, 2_000), 8_000);
  });

  it('stops at the expiry workerless gave when Lambda started the event late', () => {
    assert.equal(pollingWindowMs(900_000, 7_000, 60_000), 53_000);
    assert.equal(pollingWindowMs(900_000, 7_000, -5), 0);
    assert.equal(pollingWindowMs(20_000, 7_000, 60_000), 13_000);
    assert.equal(workerSettingsFromEnv({ TEMPORAL_TASK_QUEUE: 'q' }, { expiresAt: 1_700_000_060_000 }).expiresAt, 1_700_000_060_000);
    assert.equal(workerSettingsFromEnv({ TEMPORAL_TASK_QUEUE: 'q' }, { expiresAt: 'later' }).expiresAt, undefined);
  });
});

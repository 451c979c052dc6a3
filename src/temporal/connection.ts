// The Temporal connection of spillover (and of `workerless check`): @temporalio/client over gRPC, with TLS, mTLS
// or an API key, opened with retries that a stop cuts short.
import { readFile } from 'node:fs/promises';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import type { Logger } from 'pino';
import { backoffMs } from '../util/backoff.ts';
import type { TemporalConfig } from './options.ts';
import type { SpilloverClock } from './task-queue-context.ts';
import { createTaskQueueStatsReader, statsRpcVia, type TaskQueueStatsReader } from './task-queue-stats.ts';

/** A connected stats reader that can be closed. */
export interface TemporalStatsConnection extends TaskQueueStatsReader {
  close(): Promise<void>;
}

/** Retry cap: a connect failure, and a failed read of a task queue's statistics, are retried within a minute. */
export const MAX_READ_BACKOFF_MS = 60_000;

export async function connectWithRetry(
  config: TemporalConfig,
  connect: (config: TemporalConfig) => Promise<TemporalStatsConnection>,
  logger: Logger,
  clock: SpilloverClock,
  random: () => number,
  signal: AbortSignal,
): Promise<TemporalStatsConnection | undefined> {
  for (let attempt = 1; !signal.aborted; attempt++) {
    const pending = connect(config);
    // Connecting may take its full timeout; shutdown must not wait for it.
    let onAbort = (): void => {};
    const aborted = new Promise<'interrupted'>((resolve) => {
      onAbort = () => resolve('interrupted');
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const result = await Promise.race([pending, aborted]).finally(() => signal.removeEventListener('abort', onAbort));
      if (result === 'interrupted') {
        pending
          .then(
            (late) => late.close(),
            () => undefined,
          )
          .catch(() => undefined);
        return undefined;
      }
      logger.info({ address: config.address, namespace: config.namespace, attempt }, 'connected to temporal');
      return result;
    } catch (err) {
      const retryInMs = backoffMs(attempt, Math.max(1_000, config.pollIntervalMs), MAX_READ_BACKOFF_MS, random);
      logger.warn({ err, address: config.address, attempt, retryInMs }, 'could not connect to temporal; retrying');
      await clock.sleep(retryInMs, signal);
    }
  }
  return undefined;
}

/** The default connection: @temporalio/client over gRPC, with TLS / mTLS / API key from the config. */
export async function connectTemporal(config: TemporalConfig): Promise<TemporalStatsConnection> {
  const options: ConnectionOptions = { address: config.address, connectTimeout: 10_000 };
  if (config.tls !== undefined) {
    const { certPath, keyPath, caPath, serverName } = config.tls;
    options.tls = {
      ...(serverName !== undefined ? { serverNameOverride: serverName } : {}),
      ...(caPath !== undefined ? { serverRootCACertificate: await readFile(caPath) } : {}),
      ...(certPath !== undefined && keyPath !== undefined
        ? { clientCertPair: { crt: await readFile(certPath), key: await readFile(keyPath) } }
        : {}),
    };
  }
  if (config.apiKey !== undefined) {
    options.apiKey = config.apiKey;
    // Temporal Cloud routes API-key requests by this header.
    options.metadata = { 'temporal-namespace': config.namespace };
  }
  const connection = await Connection.connect(options);
  const reader = createTaskQueueStatsReader(statsRpcVia(connection), config.namespace);
  return { read: (...args) => reader.read(...args), close: () => connection.close() };
}

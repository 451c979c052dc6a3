// The real I/O behind `workerless check`: the AWS adapters a run builds (the same --aws-client, region,
// --endpoint-url, AWS_ENDPOINT_URL_* variables, one Invoke attempt), and the run's own Temporal connection.
import { connect as tcpConnect } from 'node:net';
import { endpointName, type AwsEndpoints } from '../aws/endpoints.ts';
import { createAwsAdapters } from '../aws/adapters.ts';
import { CHECK_METRIC, type CheckPorts } from './check.ts';
import type { Config } from '../config/config.ts';
import { resolveQueue } from '../aws/sqs-source.ts';

export interface CheckAdapters extends CheckPorts {
  /** Releases the clients' sockets. */
  close(): void;
}

/** `endpoints`: where a run's calls go (resolved at start-up, src/aws/endpoints.ts). */
export function createCheckAdapters(config: Config, endpoints: AwsEndpoints): CheckAdapters {
  const aws = createAwsAdapters(config.awsClient, config, endpoints, { maxSockets: 50 });
  return {
    endpoints: { lambda: endpointName(endpoints.lambda.url), cloudwatch: endpointName(endpoints.cloudwatch.url) },
    resolveQueue: async (spec, signal) => resolveQueue((await aws).sqs, spec, undefined, signal, endpoints.sqs),
    dryRun: async (functionName, signal) => (await aws).invoker(functionName).dryRun(signal),
    // The run's own PutMetricData (lean or SDK), which throws an AwsCallError when CloudWatch refuses.
    putCheckDatum: async (namespace, signal) =>
      (await (await aws).cloudwatch()).putMetricData(
        { Namespace: namespace, MetricData: [{ MetricName: CHECK_METRIC, Unit: 'Count', Value: 1 }] },
        signal,
      ),
    async connectTemporal(temporal) {
      // Loaded only when spillover is configured: the Temporal client is large.
      const { connectTemporal } = await import('../temporal/connection.ts');
      return connectTemporal(temporal);
    },
    probeTcp,
    close: () => {
      aws.then(
        (a) => a.destroy(),
        () => {},
      );
    },
  };
}

/** Opens and closes one TCP connection to host:port; returns the error code (or "timed out") when it fails. */
function probeTcp(address: string, signal: AbortSignal): Promise<string | undefined> {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const port = Number(address.slice(colon + 1));
  return new Promise((resolve) => {
    const socket = tcpConnect({ host, port, signal });
    socket.once('connect', () => {
      socket.destroy();
      resolve(undefined);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      socket.destroy();
      resolve(err.name === 'AbortError' ? 'timed out' : (err.code ?? err.message));
    });
  });
}

// The real I/O behind `workerless check`: the AWS adapters a run builds (the same --aws-client, region,
// --endpoint-url, AWS_ENDPOINT_URL_* variables, one Invoke attempt), and the run's own Temporal connection.
// GetFunctionConfiguration and GetFunctionConcurrency go through the SDK's Lambda client with either
// --aws-client: a run never makes them (the lean client carries only the calls made per message), and that
// client is the one a run builds for Temporal spillover, with the same endpoint, credentials and clock.
import { connect as tcpConnect } from 'node:net';
import type { FunctionConfiguration as SdkFunctionConfiguration } from '@aws-sdk/client-lambda';
import { endpointName, type AwsEndpoints } from '../aws/endpoints.ts';
import { sdkAgents } from '../aws/sdk-agents.ts';
import { createAwsAdapters } from '../aws/adapters.ts';
import { CHECK_METRIC } from './check.ts';
import { type CheckPorts } from './check-ports.ts';
import { AwsCallError, classifyAwsError } from '../core/errors.ts';
import type { FunctionConfiguration } from './function-fit.ts';
import type { Config } from '../config/config.ts';
import { resolveQueue } from '../aws/resolve-queues.ts';
import { findQueues } from '../aws/queue-discovery.ts';
import { createFleetStore } from '../aws/fleet-store.ts';
import { FLEET_PROBE_PARTITION } from './fleet-check.ts';

export interface CheckAdapters extends CheckPorts {
  /** Releases the clients' sockets. */
  close(): void;
}

/** `endpoints`: where a run's calls go (resolved at start-up, src/aws/endpoints.ts). */
export function createCheckAdapters(config: Config, endpoints: AwsEndpoints): CheckAdapters {
  const aws = createAwsAdapters(config.awsClient, config, endpoints, { maxSockets: 50 });
  return {
    endpoints: { lambda: endpointName(endpoints.lambda.url), cloudwatch: endpointName(endpoints.cloudwatch.url) },
    async ecsService(ref, signal) {
      const [{ ecsClient }, { describeEcsService }] = await Promise.all([
        import('../temporal/spillover.ts'),
        import('../temporal/ecs-worker-set.ts'),
      ]);
      const requestHandler = sdkAgents(4, endpoints.network);
      const { client, endpoint } = await ecsClient({ region: config.region, endpointUrl: config.endpointUrl, requestHandler });
      try {
        return await describeEcsService(client, ref, endpoint, signal);
      } finally {
        client.destroy();
      }
    },
    resolveQueue: async (spec, signal) => resolveQueue((await aws).sqs, spec, undefined, signal, endpoints.sqs),
    async findQueues(selector, signal) {
      const { found, unreadable } = await findQueues((await aws).sqs, selector, signal);
      return { found: found.map((q) => q.name), unreadable };
    },
    dryRun: async (functionName, signal, params) => (await aws).invoker(functionName).dryRun(signal, params),
    async functionConfiguration(functionName, qualifier, signal) {
      const [{ GetFunctionConfigurationCommand }, lambda] = await Promise.all([import('@aws-sdk/client-lambda'), (await aws).sdk.lambda()]);
      const command = new GetFunctionConfigurationCommand({
        FunctionName: functionName,
        ...(qualifier !== undefined ? { Qualifier: qualifier } : {}),
      });
      try {
        return configurationOf(await lambda.send(command, { abortSignal: signal }));
      } catch (err) {
        throw new AwsCallError('GetFunctionConfiguration', classifyAwsError(err, signal));
      }
    },
    async reservedConcurrency(functionName, signal) {
      const [{ GetFunctionConcurrencyCommand }, lambda] = await Promise.all([import('@aws-sdk/client-lambda'), (await aws).sdk.lambda()]);
      try {
        const out = await lambda.send(new GetFunctionConcurrencyCommand({ FunctionName: functionName }), { abortSignal: signal });
        return out.ReservedConcurrentExecutions;
      } catch (err) {
        throw new AwsCallError('GetFunctionConcurrency', classifyAwsError(err, signal));
      }
    },
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
    fleetTable(fleet) {
      const options = { table: fleet.table, region: config.region, endpointUrl: config.endpointUrl, network: endpoints.network };
      const store = createFleetStore({ ...options, fleet: fleet.name });
      const probe = createFleetStore({ ...options, fleet: FLEET_PROBE_PARTITION });
      return {
        checkTable: () => store.checkTable(),
        members: () => store.members(),
        probe,
        destroy: () => {
          store.destroy();
          probe.destroy();
        },
      };
    },
    close: () => {
      aws.then(
        (a) => a.destroy(),
        () => {},
      );
    },
  };
}

/** What the check reads of a GetFunctionConfiguration answer. Lambda's default timeout is 3 s when none is given. */
function configurationOf(out: SdkFunctionConfiguration): FunctionConfiguration {
  const managed = out.CapacityProviderConfig?.LambdaManagedInstancesCapacityProviderConfig;
  return {
    version: out.Version ?? '$LATEST',
    timeoutSec: out.Timeout ?? 3,
    codeSha256: out.CodeSha256,
    managedInstances:
      managed?.CapacityProviderArn !== undefined
        ? { capacityProviderArn: managed.CapacityProviderArn, perEnvironmentMaxConcurrency: managed.PerExecutionEnvironmentMaxConcurrency }
        : undefined,
    tenantIsolationMode: out.TenancyConfig?.TenantIsolationMode,
    durable: out.DurableConfig ? { executionTimeoutSec: out.DurableConfig.ExecutionTimeout } : undefined,
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

// `workerless check` against Temporal: connects with the run's options and reads each task queue with the
// DescribeTaskQueue spillover uses, one line per task queue, or one line saying why Temporal cannot be reached.
import { firstLine } from '../core/errors.ts';
import type { TemporalConfig } from '../temporal/options.ts';
import type { CheckPorts, CheckResult, TemporalCheckConnection } from './check-ports.ts';

/** One line when Temporal cannot be reached; else one per task queue, each proven with the run's DescribeTaskQueue. */
export async function checkTemporal(ports: CheckPorts, config: TemporalConfig, deadline: () => AbortSignal): Promise<CheckResult[]> {
  const where = `namespace ${config.namespace} at ${config.address}`;
  let connection: TemporalCheckConnection;
  try {
    connection = await ports.connectTemporal(config);
  } catch (err) {
    // The client says only "Failed to connect before the deadline"; a plain TCP connect tells why.
    const reason = await ports.probeTcp(config.address, deadline());
    const detail =
      reason !== undefined
        ? `cannot reach Temporal: ${reason} (check --temporal-address and the network)`
        : `cannot connect: ${describeTemporalError(err)} (the port answers: check --temporal-tls, the TLS files and --temporal-api-key)`;
    return [{ name: `temporal ${config.address}`, ok: false, detail }];
  }
  try {
    return await Promise.all(
      config.taskQueues.map(async (taskQueue): Promise<CheckResult> => {
        const name = `temporal task queue ${taskQueue}`;
        try {
          const stats = await connection.read(taskQueue, deadline());
          const known = stats.workflow.known !== false && stats.activity.known !== false;
          const backlog = known
            ? String(stats.workflow.backlog + stats.activity.backlog)
            : 'unknown (no statistics: an unloaded task queue)';
          return { name, ok: true, detail: `${where}, backlog ${backlog}` };
        } catch (err) {
          const hint = grpcStatus(err) === 'PERMISSION_DENIED' ? ` (needs DescribeTaskQueue in namespace ${config.namespace})` : '';
          return { name, ok: false, detail: `${describeTemporalError(err)}${hint}` };
        }
      }),
    );
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** gRPC status names by code, for the statuses an operator can act on. */
const GRPC_STATUS: Readonly<Record<number, string>> = {
  1: 'CANCELLED',
  3: 'INVALID_ARGUMENT',
  4: 'DEADLINE_EXCEEDED',
  5: 'NOT_FOUND',
  7: 'PERMISSION_DENIED',
  8: 'RESOURCE_EXHAUSTED',
  9: 'FAILED_PRECONDITION',
  12: 'UNIMPLEMENTED',
  13: 'INTERNAL',
  14: 'UNAVAILABLE',
  16: 'UNAUTHENTICATED',
};

/** The gRPC status of a Temporal client error (a ServiceError carries the gRPC error as its cause). */
function grpcStatus(err: unknown, depth = 0): string | undefined {
  if (err === null || typeof err !== 'object' || depth > 3) return undefined;
  const e = err as { code?: unknown; cause?: unknown };
  if (typeof e.code === 'number') return GRPC_STATUS[e.code] ?? `gRPC status ${e.code}`;
  return grpcStatus(e.cause, depth + 1);
}

function describeTemporalError(err: unknown): string {
  // grpc-js writes "5 NOT_FOUND: ..."; the number says nothing more than the name.
  const message = firstLine(err instanceof Error ? err.message : String(err)).replace(/^\d+ ([A-Z_]+): /, '$1: ');
  if ((err as { name?: unknown } | null)?.name === 'AbortError') return 'timed out';
  const status = grpcStatus(err);
  return status !== undefined && !message.includes(status) ? `${status}: ${message}` : message;
}

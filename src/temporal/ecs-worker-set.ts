// A worker set kept as an ECS service's desired count: UpdateService desiredCount (ECS API reference, UpdateService:
// "desiredCount: The number of instantiations of the task to place and keep running in your service"). Thin: the size
// comes from worker-set-sizing.ts, already within --temporal-worker-set-min and -max; this only sends it, once per
// change, and turns a failure into one line naming the service and the endpoint.
import type { ECSClient } from '@aws-sdk/client-ecs';
import { DescribeServicesCommand, UpdateServiceCommand } from '@aws-sdk/client-ecs';
import { firstLine, isAbort } from '../core/errors.ts';
import type { EcsServiceRef } from './options.ts';

export type ApplyOutcome = { readonly ok: true } | { readonly ok: false; readonly reason: string };

export interface WorkerSetActuator {
  /** Sets the set's size; never throws (a failure is the outcome). */
  apply(desired: number, signal: AbortSignal): Promise<ApplyOutcome>;
}

export function ecsWorkerSet(ecs: ECSClient, ref: EcsServiceRef, endpoint: string): WorkerSetActuator {
  return {
    async apply(desired, signal) {
      try {
        await ecs.send(new UpdateServiceCommand({ cluster: ref.cluster, service: ref.service, desiredCount: desired }), {
          abortSignal: signal,
        });
        return { ok: true };
      } catch (err) {
        if (signal.aborted || isAbort(err)) return { ok: false, reason: 'interrupted' };
        const e = err as { name?: unknown; message?: unknown; code?: unknown };
        const code = typeof e.name === 'string' && e.name !== 'Error' ? e.name : typeof e.code === 'string' ? e.code : 'Error';
        const message = firstLine(typeof e.message === 'string' ? e.message : String(err));
        const hint = code === 'AccessDeniedException' ? ' (needs ecs:UpdateService)' : '';
        return { ok: false, reason: `UpdateService ${ref.cluster}/${ref.service} at ${endpoint}: ${code}: ${message}${hint}` };
      }
    },
  };
}

/** What `workerless check` says of the ECS service: found and ACTIVE (passes), or why not. */
export interface EcsServiceVerdict {
  readonly ok: boolean;
  readonly detail: string;
}

/**
 * DescribeServices of the service, as Temporal's ECS provider validates its configuration (the service must be found
 * and ACTIVE): `ACTIVE, desired N, running M`, or `not found in cluster C (MISSING)`, `status DRAINING`, or the error
 * with the endpoint. Proves ecs:DescribeServices only; UpdateService has no dry run.
 */
export async function describeEcsService(
  ecs: ECSClient,
  ref: EcsServiceRef,
  endpoint: string,
  signal: AbortSignal,
): Promise<EcsServiceVerdict> {
  try {
    const out = await ecs.send(new DescribeServicesCommand({ cluster: ref.cluster, services: [ref.service] }), { abortSignal: signal });
    const service = out.services?.[0];
    if (service === undefined) {
      const reason = out.failures?.[0]?.reason;
      return { ok: false, detail: `not found in cluster ${ref.cluster}${reason !== undefined ? ` (${reason})` : ''}` };
    }
    if (service.status !== 'ACTIVE') return { ok: false, detail: `status ${service.status ?? 'unknown'}, not ACTIVE` };
    return { ok: true, detail: `ACTIVE, desired ${service.desiredCount ?? 0}, running ${service.runningCount ?? 0}` };
  } catch (err) {
    if (signal.aborted || isAbort(err)) return { ok: false, detail: 'timed out' };
    const e = err as { name?: unknown; message?: unknown };
    const code = typeof e.name === 'string' && e.name !== 'Error' ? e.name : 'Error';
    const message = firstLine(typeof e.message === 'string' ? e.message : String(err));
    const hint = code === 'AccessDeniedException' ? ' (needs ecs:DescribeServices and ecs:UpdateService)' : '';
    return { ok: false, detail: `cannot read it at ${endpoint}: ${code}: ${message}${hint}` };
  }
}

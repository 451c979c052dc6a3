// A worker set kept as an ECS service's desired count: UpdateService desiredCount (ECS API reference, UpdateService:
// "desiredCount: The number of instantiations of the task to place and keep running in your service"). Thin: the size
// comes from worker-set-sizing.ts, already within --temporal-worker-set-min and -max; this only sends it, once per
// change, and turns a failure into one line naming the service and the endpoint.
import type { ECSClient } from '@aws-sdk/client-ecs';
import { UpdateServiceCommand } from '@aws-sdk/client-ecs';
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

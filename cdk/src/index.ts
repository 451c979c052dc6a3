export { Workerless, type WorkerlessProps, type WorkerlessQueue } from './workerless.ts';
export type { WorkerlessOptions } from './daemon-environment.ts';
export type { WorkerlessAlarmProps } from './alarms.ts';
export type { WorkerlessScalingProps } from './autoscaling.ts';
export type { WorkerlessFleetTableProps } from './fleet-table.ts';

// Messages between the endpoint (server.ts) and an execution environment (runner.ts), over the fork IPC channel.

/** The body Lambda returns for a function error (X-Amz-Function-Error: Unhandled). */
export interface ErrorPayload {
  errorType: string;
  errorMessage: string;
  trace?: string[];
}

/** Context fields that do not depend on the child (the child adds awsRequestId and the methods). */
export interface ContextFields {
  functionName: string;
  functionVersion: string;
  invokedFunctionArn: string;
  /** A string in the Node.js runtime, e.g. "128". */
  memoryLimitInMB: string;
  logGroupName: string;
  logStreamName: string;
  /** A function in tenant isolation mode: the invocation's tenant (tenancy.ts). */
  tenantId?: string;
}

export type ParentMessage =
  { type: 'init'; handlerPath: string } | { type: 'invoke'; requestId: string; event: unknown; context: ContextFields; deadlineMs: number };

export type ChildMessage =
  | { type: 'ready' }
  | { type: 'init-error'; error: ErrorPayload }
  | { type: 'result'; requestId: string; body: string }
  /** fatal: the error escaped the handler (uncaught); the child exits right after. */
  | { type: 'error'; requestId: string; error: ErrorPayload; fatal: boolean };

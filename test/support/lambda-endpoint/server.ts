// A local AWS Lambda Invoke endpoint for tests and the demo. LocalStack cannot run function code on these
// machines (see docs/TEST-INFRA.md), so this speaks the real Invoke API -
// POST /2015-03-31/functions/{FunctionName}/invocations - and runs real handler modules, each execution
// environment in its own child process (runner.ts). Responses reproduce what @aws-sdk/client-lambda sees from
// AWS: status codes, X-Amz-Function-Error, x-amzn-ErrorType error bodies, throttling with a Reason, the 6 MB
// request limit. Not shipped: it lives under test/.
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { MANAGED_INSTANCES_THROTTLE, ManagedCapacity, type ManagedInstancesSpec } from './managed-instances.ts';
import type { ChildMessage, ContextFields, ErrorPayload, ParentMessage } from './protocol.ts';
import { DurableExecutions } from './durable-executions.ts';
import { functionReads, type ConfigurationSpec, type FunctionReadCall } from './function-configuration.ts';
import { phaseTls } from '../phase-tls.ts';
import { takeIdle, tenantOf, type TenancyConfig } from './tenancy.ts';

export type { ErrorPayload } from './protocol.ts';

/** Synchronous Invoke request limit (AWS: 6 MB for the request and the response). */
export const MAX_SYNC_PAYLOAD_BYTES = 6_291_456;
/** Asynchronous (Event) Invoke request limit: 1 MiB since AWS raised it from 256 KB in 2025. */
export const MAX_ASYNC_PAYLOAD_BYTES = 1_048_576;
/** Lambda gives the init phase (module import) 10 s. */
const INIT_TIMEOUT_MS = 10_000;

export interface FunctionSpec {
  /** Absolute path to a JS/TS module exporting `handler(event, context[, callback])`. */
  handler: string;
  /** Function timeout; default 3 s, as in Lambda. */
  timeoutSec?: number;
  /** Reserved concurrency; default none (unlimited). 0 throttles every synchronous invoke. */
  reservedConcurrency?: number;
  /** Extra environment variables for the handler's process. */
  env?: Record<string, string>;
  /** Reported as context.memoryLimitInMB; default 128. */
  memoryMb?: number;
  /** What GetFunctionConfiguration and GetFunctionConcurrency answer (function-configuration.ts). */
  configuration?: ConfigurationSpec;
  /** A Lambda Managed Instances function: capacity that scales asynchronously (managed-instances.ts). */
  managedInstances?: ManagedInstancesSpec;
  /** Tenant isolation mode (tenancy.ts); default none. */
  tenancy?: TenancyConfig;
}

export interface LambdaEndpointOptions {
  /** Default 0: a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Used in ARNs and AWS_REGION; default us-east-1. */
  region?: string;
  /** Used in ARNs; default 000000000000 (LocalStack's account). */
  accountId?: string;
  functions: Record<string, FunctionSpec>;
  /** Where the handlers' stdout/stderr go; default 'stderr' (keeps our stdout for the CLI's JSON lines). */
  handlerOutput?: 'stderr' | 'inherit' | 'ignore';
  /** Called whenever an invocation finishes (any status). */
  onInvocation?: (record: InvocationRecord) => void;
  /** Called for requests rejected before the handler ran (404, 413, 429, 400, DryRun). */
  onRejected?: (rejected: RejectedRequest) => void;
}

/** running -> success | error (handler threw / init failed) | timeout | crash (process exited). */
export type InvocationStatus = 'running' | 'success' | 'error' | 'timeout' | 'crash';

export interface InvocationRecord {
  requestId: string;
  functionName: string;
  /** The qualifier the caller used (version or alias), if any. */
  qualifier: string | undefined;
  invocationType: 'RequestResponse' | 'Event';
  /** The parsed request payload (the event). */
  payload: unknown;
  payloadBytes: number;
  /** Epoch ms when the request was accepted / when the handler finished. */
  startedAt: number;
  endedAt: number | undefined;
  status: InvocationStatus;
  /** The HTTP status returned to the caller (202 for Event). */
  statusCode: number;
  /** The handler's result, parsed (null for undefined). */
  result: unknown;
  error: ErrorPayload | undefined;
  /** A new child process was started for this invocation. */
  coldStart: boolean;
  /** The X-Amz-Tenant-Id the invocation carried, if any (tenancy.ts). */
  tenantId: string | undefined;
}

export interface RejectedRequest {
  requestId: string;
  functionName: string;
  statusCode: number;
  errorType: string;
  reason: string | undefined;
  at: number;
}

export interface LambdaEndpoint {
  /** e.g. http://127.0.0.1:41234 - give it to LambdaClient as `endpoint`. */
  url: string;
  /** Every accepted invocation, in arrival order (live objects; status changes as they finish). */
  invocations: InvocationRecord[];
  /** Requests answered without running the handler. */
  rejected: RejectedRequest[];
  /** Durable executions started, by DurableExecutionName (durable-executions.ts). */
  durable: DurableExecutions;
  /** GetFunctionConfiguration and GetFunctionConcurrency calls (function-configuration.ts). */
  reads: FunctionReadCall[];
  /** Resolves with the invocations once `predicate` holds; rejects after timeoutMs (default 10 s). */
  waitFor(predicate: (invocations: readonly InvocationRecord[]) => boolean, timeoutMs?: number): Promise<readonly InvocationRecord[]>;
  /** Change (or with undefined remove) a function's reserved concurrency. */
  setReservedConcurrency(functionName: string, n: number | undefined): void;
  /** Most invocations of the function that ran at the same time. */
  peakConcurrency(functionName: string): number;
  /** Invocations of the function running right now. */
  inFlight(functionName: string): number;
  /** Forget recorded invocations, rejections and peaks (running ones keep running). */
  reset(): void;
  /** Close the server and kill every execution environment. */
  stop(): Promise<void>;
}

type Outcome =
  | { kind: 'success'; body: string }
  | { kind: 'error'; error: ErrorPayload }
  | { kind: 'timeout' }
  | { kind: 'crash'; code: number | null; signal: NodeJS.Signals | null };

interface Sandbox {
  /** The one tenant it serves, for a function in tenant isolation mode (tenancy.ts). */
  tenantId?: string | undefined;
  child: ChildProcess;
  exited: Promise<void>;
  alive: boolean;
}

interface FunctionState {
  name: string;
  spec: FunctionSpec;
  reserved: number | undefined;
  inFlight: number;
  peak: number;
  idle: Sandbox[];
  /** Event invocations waiting for a concurrency slot. */
  waiters: Array<() => void>;
  managed?: ManagedCapacity | undefined;
}

const RUNNER_PATH = fileURLToPath(new URL('./runner.ts', import.meta.url));

class ApiError extends Error {
  readonly statusCode: number;
  readonly errorType: string;
  readonly reason: string | undefined;
  constructor(statusCode: number, errorType: string, message: string, reason?: string) {
    super(message);
    this.statusCode = statusCode;
    this.errorType = errorType;
    this.reason = reason;
  }
}

interface FunctionRef {
  name: string;
  qualifier: string | undefined;
}

/** FunctionName may be NAME, NAME:QUALIFIER, ACCOUNT:function:NAME[:Q] or arn:aws:lambda:R:A:function:NAME[:Q]. */
export function parseFunctionRef(raw: string, queryQualifier: string | null): FunctionRef {
  const parts = raw.split(':');
  let name: string | undefined;
  let qualifier: string | undefined;
  if (parts[0] === 'arn') {
    if (parts.length < 7 || parts.length > 8 || parts[2] !== 'lambda' || parts[5] !== 'function') {
      throw new ApiError(
        400,
        'ValidationException',
        `1 validation error detected: Value '${raw}' at 'functionName' failed to satisfy constraint`,
      );
    }
    name = parts[6];
    qualifier = parts[7];
  } else if (parts.length >= 3 && parts[1] === 'function') {
    name = parts[2];
    qualifier = parts[3];
  } else if (parts.length <= 2) {
    name = parts[0];
    qualifier = parts[1];
  }
  if (name === undefined || name === '' || !/^[a-zA-Z0-9_-]{1,64}$/.test(name)) {
    throw new ApiError(
      400,
      'ValidationException',
      `1 validation error detected: Value '${raw}' at 'functionName' failed to satisfy constraint`,
    );
  }
  if (qualifier !== undefined && queryQualifier !== null && qualifier !== queryQualifier) {
    throw new ApiError(
      400,
      'InvalidParameterValueException',
      'The derived qualifier from the function name does not match the specified qualifier.',
    );
  }
  return { name, qualifier: qualifier ?? queryQualifier ?? undefined };
}

export async function startLambdaEndpoint(opts: LambdaEndpointOptions): Promise<LambdaEndpoint> {
  const region = opts.region ?? 'us-east-1';
  const accountId = opts.accountId ?? '000000000000';
  const functions = new Map<string, FunctionState>();
  for (const [name, spec] of Object.entries(opts.functions)) {
    const managed = spec.managedInstances && new ManagedCapacity(spec.managedInstances);
    functions.set(name, { name, spec, reserved: spec.reservedConcurrency, inFlight: 0, peak: 0, idle: [], waiters: [], managed });
  }
  const invocations: InvocationRecord[] = [];
  const rejected: RejectedRequest[] = [];
  const durable = new DurableExecutions();
  const sandboxes = new Set<Sandbox>();
  const listeners = new Set<() => void>();
  let stopping = false;

  const changed = (): void => {
    for (const listener of [...listeners]) listener();
  };
  const functionArn = (name: string, qualifier?: string): string =>
    `arn:aws:lambda:${region}:${accountId}:function:${name}${qualifier === undefined ? '' : `:${qualifier}`}`;
  const reads = functionReads({ find: (name) => functions.get(name), functionArn, parseRef: parseFunctionRef });

  const stdio = (() => {
    switch (opts.handlerOutput ?? 'stderr') {
      case 'inherit':
        return ['ignore', 'inherit', 'inherit', 'ipc'] as const;
      case 'ignore':
        return ['ignore', 'ignore', 'ignore', 'ipc'] as const;
      default:
        return ['ignore', 2, 2, 'ipc'] as const;
    }
  })();

  /** Start an execution environment and run the init phase (import the handler module). */
  async function createSandbox(fn: FunctionState): Promise<{ sandbox: Sandbox; initError?: ErrorPayload }> {
    const timeoutSec = fn.spec.timeoutSec ?? 3;
    const memory = fn.spec.memoryMb ?? 128;
    const child = fork(RUNNER_PATH, [], {
      // Not the parent's execArgv: under `node --test` it carries test-runner flags.
      execArgv: [],
      stdio: [...stdio],
      env: {
        ...process.env,
        AWS_REGION: region,
        AWS_DEFAULT_REGION: region,
        AWS_LAMBDA_FUNCTION_NAME: fn.name,
        AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(memory),
        AWS_LAMBDA_FUNCTION_TIMEOUT: String(timeoutSec),
        AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${fn.name}`,
        AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
        ...fn.spec.env,
      },
    });
    const sandbox: Sandbox = {
      child,
      alive: true,
      exited: new Promise((resolve) => child.once('exit', () => resolve())),
    };
    sandboxes.add(sandbox);
    void sandbox.exited.then(() => {
      sandbox.alive = false;
      sandboxes.delete(sandbox);
      const i = fn.idle.indexOf(sandbox);
      if (i >= 0) fn.idle.splice(i, 1);
    });
    const initError = await new Promise<ErrorPayload | undefined>((resolve) => {
      const timer = setTimeout(() => {
        cleanup();
        resolve({ errorType: 'Runtime.InitTimeout', errorMessage: `Init phase exceeded ${INIT_TIMEOUT_MS} ms` });
      }, INIT_TIMEOUT_MS);
      const onMessage = (message: ChildMessage): void => {
        if (message.type === 'ready') {
          cleanup();
          resolve(undefined);
        } else if (message.type === 'init-error') {
          cleanup();
          resolve(message.error);
        }
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
        cleanup();
        resolve({
          errorType: 'Runtime.ExitError',
          errorMessage: `Runtime exited during init: ${signal === null ? `exit status ${code}` : `signal: ${signal}`}`,
        });
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
      };
      child.on('message', onMessage);
      child.on('exit', onExit);
      child.send({ type: 'init', handlerPath: fn.spec.handler } satisfies ParentMessage);
    });
    if (initError !== undefined) child.kill('SIGKILL');
    return initError === undefined ? { sandbox } : { sandbox, initError };
  }

  /** Run one invocation in a warm environment if one is idle, else in a new one. */
  async function execute(fn: FunctionState, record: InvocationRecord, qualifier: string | undefined): Promise<Outcome> {
    const tenantId = fn.spec.tenancy !== undefined ? record.tenantId : undefined;
    let sandbox = takeIdle(fn.idle, tenantId);
    if (sandbox === undefined || !sandbox.alive) {
      record.coldStart = true;
      const created = await createSandbox(fn);
      if (created.initError !== undefined) return { kind: 'error', error: created.initError };
      sandbox = created.sandbox;
      sandbox.tenantId = tenantId;
    }
    const timeoutSec = fn.spec.timeoutSec ?? 3;
    const deadlineMs = Date.now() + timeoutSec * 1000;
    const context: ContextFields = {
      functionName: fn.name,
      functionVersion: '$LATEST',
      invokedFunctionArn: functionArn(fn.name, qualifier),
      memoryLimitInMB: String(fn.spec.memoryMb ?? 128),
      logGroupName: `/aws/lambda/${fn.name}`,
      logStreamName: `${new Date().toISOString().slice(0, 10).replaceAll('-', '/')}/[$LATEST]${randomUUID().replaceAll('-', '')}`,
      ...(tenantId !== undefined ? { tenantId } : {}),
    };
    const { child } = sandbox;
    const outcome = await new Promise<Outcome>((resolve) => {
      const timer = setTimeout(() => {
        cleanup();
        // Lambda stops the sandbox on a timeout; the next invocation gets a fresh one.
        child.kill('SIGKILL');
        resolve({ kind: 'timeout' });
      }, timeoutSec * 1000);
      const onMessage = (message: ChildMessage): void => {
        if (message.type === 'result' && message.requestId === record.requestId) {
          cleanup();
          resolve({ kind: 'success', body: message.body });
        } else if (message.type === 'error' && message.requestId === record.requestId) {
          cleanup();
          if (message.fatal) child.kill('SIGKILL');
          resolve({ kind: 'error', error: message.error });
        }
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
        cleanup();
        resolve({ kind: 'crash', code, signal });
      };
      const cleanup = (): void => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
      };
      child.on('message', onMessage);
      child.on('exit', onExit);
      child.send({ type: 'invoke', requestId: record.requestId, event: record.payload, context, deadlineMs } satisfies ParentMessage);
    });
    if (sandbox.alive && (outcome.kind === 'success' || outcome.kind === 'error') && !stopping) {
      fn.idle.push(sandbox);
    }
    return outcome;
  }

  function acquireSlot(fn: FunctionState): void {
    fn.inFlight += 1;
    fn.peak = Math.max(fn.peak, fn.inFlight);
    fn.managed?.observe(fn.inFlight);
  }

  function releaseSlot(fn: FunctionState): void {
    fn.inFlight -= 1;
    fn.managed?.observe(fn.inFlight);
    const next = fn.waiters.shift();
    if (next !== undefined) next();
  }

  function hasSlot(fn: FunctionState): boolean {
    return fn.reserved === undefined || fn.inFlight < fn.reserved;
  }

  /** Run the handler and settle the record; returns the HTTP response parts for a synchronous caller. */
  async function run(
    fn: FunctionState,
    record: InvocationRecord,
    qualifier: string | undefined,
  ): Promise<{ body: string; functionError: boolean }> {
    let outcome: Outcome;
    try {
      outcome = await execute(fn, record, qualifier);
    } finally {
      releaseSlot(fn);
    }
    let body: string;
    let functionError = true;
    switch (outcome.kind) {
      case 'success':
        if (Buffer.byteLength(outcome.body) > MAX_SYNC_PAYLOAD_BYTES) {
          record.status = 'error';
          record.error = {
            errorType: 'Function.ResponseSizeTooLarge',
            errorMessage: `Response payload size exceeded maximum allowed payload size (${MAX_SYNC_PAYLOAD_BYTES} bytes).`,
          };
          body = JSON.stringify(record.error);
        } else {
          record.status = 'success';
          record.result = JSON.parse(outcome.body) as unknown;
          body = outcome.body;
          functionError = false;
        }
        break;
      case 'error':
        record.status = 'error';
        record.error = outcome.error;
        body = JSON.stringify(outcome.error);
        break;
      case 'timeout': {
        const timeoutSec = fn.spec.timeoutSec ?? 3;
        record.status = 'timeout';
        record.error = {
          errorType: 'Sandbox.Timedout',
          errorMessage: `RequestId: ${record.requestId} Error: Task timed out after ${timeoutSec.toFixed(2)} seconds`,
        };
        body = JSON.stringify(record.error);
        break;
      }
      case 'crash':
        record.status = 'crash';
        record.error = {
          errorType: 'Runtime.ExitError',
          errorMessage: `RequestId: ${record.requestId} Error: Runtime exited with error: ${
            outcome.signal === null ? `exit status ${outcome.code}` : `signal: ${outcome.signal}`
          }`,
        };
        body = JSON.stringify(record.error);
        break;
    }
    record.endedAt = Date.now();
    opts.onInvocation?.(record);
    changed();
    return { body, functionError };
  }

  function reject(res: ServerResponse, requestId: string, functionName: string, error: ApiError): void {
    const body: Record<string, string> = { Type: 'User', message: error.message };
    if (error.reason !== undefined) body['Reason'] = error.reason;
    const rejection: RejectedRequest = {
      requestId,
      functionName,
      statusCode: error.statusCode,
      errorType: error.errorType,
      reason: error.reason,
      at: Date.now(),
    };
    rejected.push(rejection);
    opts.onRejected?.(rejection);
    changed();
    send(res, error.statusCode, JSON.stringify(body), {
      'x-amzn-RequestId': requestId,
      'x-amzn-ErrorType': error.errorType,
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = randomUUID();
    const url = new URL(req.url ?? '/', 'http://localhost');
    const match = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(url.pathname);
    // Read the whole body before answering, so an early error never resets a connection the SDK keeps alive.
    const { bytes, body } = await readBody(req, MAX_SYNC_PAYLOAD_BYTES);
    if (reads.answer(req, url, res, requestId)) return;
    if (req.method !== 'POST' || match?.[1] === undefined) {
      send(res, 404, JSON.stringify({ message: `No route for ${req.method} ${url.pathname}` }), {
        'x-amzn-RequestId': requestId,
        'x-amzn-ErrorType': 'UnknownOperationException',
      });
      return;
    }
    const rawName = decodeURIComponent(match[1]);
    let ref: FunctionRef;
    try {
      ref = parseFunctionRef(rawName, url.searchParams.get('Qualifier'));
    } catch (error) {
      if (error instanceof ApiError) return reject(res, requestId, rawName, error);
      throw error;
    }
    const fn = functions.get(ref.name);
    if (fn === undefined) {
      return reject(
        res,
        requestId,
        ref.name,
        new ApiError(404, 'ResourceNotFoundException', `Function not found: ${functionArn(ref.name, ref.qualifier)}`),
      );
    }
    const invocationType = req.headers['x-amz-invocation-type'] ?? 'RequestResponse';
    if (invocationType !== 'RequestResponse' && invocationType !== 'Event' && invocationType !== 'DryRun') {
      return reject(
        res,
        requestId,
        fn.name,
        new ApiError(400, 'InvalidParameterValueException', `Unsupported invocation type: ${String(invocationType)}`),
      );
    }
    const limit = invocationType === 'Event' ? MAX_ASYNC_PAYLOAD_BYTES : MAX_SYNC_PAYLOAD_BYTES;
    if (bytes > limit) {
      return reject(
        res,
        requestId,
        fn.name,
        new ApiError(413, 'RequestEntityTooLargeException', `Request must be smaller than ${limit} bytes for the InvokeFunction operation`),
      );
    }
    let payload: unknown;
    try {
      payload = body === undefined || body.length === 0 ? {} : (JSON.parse(body.toString('utf8')) as unknown);
    } catch (error) {
      return reject(
        res,
        requestId,
        fn.name,
        new ApiError(400, 'InvalidRequestContentException', `Could not parse request body into json: ${(error as Error).message}`),
      );
    }
    const tenant = tenantOf(fn.spec.tenancy, req.headers['x-amz-tenant-id']);
    if ('refusal' in tenant) {
      const { statusCode, errorType, message } = tenant.refusal;
      return reject(res, requestId, fn.name, new ApiError(statusCode, errorType, message));
    }
    if (invocationType === 'DryRun') {
      rejected.push({ requestId, functionName: fn.name, statusCode: 204, errorType: 'DryRun', reason: undefined, at: Date.now() });
      send(res, 204, undefined, { 'x-amzn-RequestId': requestId });
      return;
    }
    if (invocationType === 'RequestResponse' && fn.managed?.refuses(fn.inFlight)) {
      const { statusCode, errorType, message } = MANAGED_INSTANCES_THROTTLE;
      return reject(res, requestId, fn.name, new ApiError(statusCode, errorType, message));
    }
    const durableName = req.headers['x-amz-durable-execution-name'];
    const admitted = typeof durableName === 'string' ? durable.admit(durableName, body) : undefined;
    if (admitted?.kind === 'refused') {
      return reject(res, requestId, fn.name, new ApiError(admitted.statusCode, admitted.errorType, admitted.message));
    }
    if (admitted?.kind === 'existing') {
      // Nothing new runs: an Event start is accepted again, a synchronous one waits for the execution's answer.
      const answer = invocationType === 'Event' ? undefined : await admitted.execution.ended;
      return send(res, answer === undefined ? 202 : 200, answer?.body, {
        'x-amzn-RequestId': requestId,
        'X-Amz-Executed-Version': '$LATEST',
        ...(answer?.functionError === true ? { 'X-Amz-Function-Error': 'Unhandled' } : {}),
      });
    }
    if (invocationType === 'RequestResponse' && !hasSlot(fn)) {
      return reject(
        res,
        requestId,
        fn.name,
        new ApiError(429, 'TooManyRequestsException', 'Rate Exceeded.', 'ReservedFunctionConcurrentInvocationLimitExceeded'),
      );
    }
    const record: InvocationRecord = {
      requestId,
      functionName: fn.name,
      qualifier: ref.qualifier,
      invocationType,
      payload,
      payloadBytes: bytes,
      startedAt: Date.now(),
      endedAt: undefined,
      status: 'running',
      statusCode: invocationType === 'Event' ? 202 : 200,
      result: undefined,
      error: undefined,
      coldStart: false,
      tenantId: tenant.tenantId,
    };
    invocations.push(record);
    const execution = admitted?.kind === 'new' ? durable.started(String(durableName), admitted.payloadHash, record) : undefined;
    if (invocationType === 'Event') {
      // Lambda queues asynchronous events and runs them when concurrency allows; the caller only sees 202.
      send(res, 202, undefined, { 'x-amzn-RequestId': requestId, 'X-Amz-Executed-Version': '$LATEST' });
      changed();
      if (!hasSlot(fn)) await new Promise<void>((resolve) => fn.waiters.push(resolve));
      if (stopping) return;
      acquireSlot(fn);
      changed();
      // Not `execution?.end(await run(...))`: without an execution that would skip the run itself.
      const answer = await run(fn, record, ref.qualifier);
      execution?.end(answer);
      return;
    }
    acquireSlot(fn);
    changed();
    const { body: responseBody, functionError } = await run(fn, record, ref.qualifier);
    execution?.end({ body: responseBody, functionError });
    send(res, 200, responseBody, {
      'x-amzn-RequestId': requestId,
      'X-Amz-Executed-Version': '$LATEST',
      ...(functionError ? { 'X-Amz-Function-Error': 'Unhandled' } : {}),
    });
  }

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        send(res, 500, JSON.stringify({ message: String(error) }), { 'x-amzn-ErrorType': 'ServiceException' });
      }
    });
  };
  // HTTPS in the TLS phase (test/support/phase-tls.ts), as Lambda speaks; plain HTTP otherwise.
  const tls = phaseTls();
  const server = tls === undefined ? createServer(onRequest) : createHttpsServer({ key: tls.key, cert: tls.cert }, onRequest);
  await new Promise<void>((resolve, rejectListen) => {
    server.once('error', rejectListen);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', rejectListen);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;

  return {
    // The phase's certificate names localhost, as a real endpoint's certificate names its host.
    url: tls === undefined ? `http://${address.address}:${address.port}` : `https://localhost:${address.port}`,
    invocations,
    rejected,
    durable,
    reads: reads.calls,
    waitFor(predicate, timeoutMs = 10_000) {
      return new Promise((resolve, rejectWait) => {
        const check = (): void => {
          if (predicate(invocations)) {
            clearTimeout(timer);
            listeners.delete(check);
            resolve(invocations);
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          const summary = invocations.map((r) => `${r.functionName}:${r.status}`).join(', ');
          rejectWait(new Error(`waitFor timed out after ${timeoutMs} ms; invocations: [${summary}]`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    setReservedConcurrency(functionName, n) {
      const fn = functions.get(functionName);
      if (fn === undefined) throw new Error(`unknown function ${functionName}`);
      fn.reserved = n;
      while (fn.waiters.length > 0 && hasSlot(fn)) fn.waiters.shift()?.();
    },
    peakConcurrency(functionName) {
      return functions.get(functionName)?.peak ?? 0;
    },
    inFlight(functionName) {
      return functions.get(functionName)?.inFlight ?? 0;
    },
    reset() {
      invocations.length = 0;
      rejected.length = 0;
      durable.reset();
      reads.calls.length = 0;
      for (const fn of functions.values()) fn.peak = fn.inFlight;
    },
    async stop() {
      stopping = true;
      for (const fn of functions.values()) {
        for (const wake of fn.waiters.splice(0)) wake();
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      const exits = [...sandboxes].map((s) => {
        s.child.kill('SIGKILL');
        return s.exited;
      });
      await Promise.all([closed, ...exits]);
    },
  };
}

function send(res: ServerResponse, statusCode: number, body: string | undefined, headers: Record<string, string>): void {
  if (res.headersSent || res.destroyed) return;
  const buffer = body === undefined ? undefined : Buffer.from(body);
  res.writeHead(statusCode, {
    ...headers,
    ...(buffer === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': String(buffer.length) }),
  });
  res.end(buffer);
}

/** Reads the body, keeping at most `keep` bytes (the rest is counted and dropped). */
async function readBody(req: IncomingMessage, keep: number): Promise<{ bytes: number; body: Buffer | undefined }> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes <= keep) chunks.push(chunk);
  }
  return { bytes, body: bytes <= keep ? Buffer.concat(chunks) : undefined };
}

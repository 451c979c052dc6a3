// One Lambda execution environment: a child process forked by server.ts. It imports the handler module once
// (the "init" phase) and then runs one invocation at a time, like a warm Lambda sandbox. Anything the handler
// does to the process (process.exit, an uncaught exception) ends only this child, never the endpoint.
import { pathToFileURL } from 'node:url';
import type { ChildMessage, ErrorPayload, ParentMessage } from './protocol.ts';

type Handler = (event: unknown, context: Record<string, unknown>, callback?: Callback) => unknown;
type Callback = (error?: unknown, result?: unknown) => void;

function send(message: ChildMessage): void {
  process.send?.(message);
}

/** The shape the Node.js Lambda runtime reports for a thrown value. */
function toErrorPayload(error: unknown, errorType?: string): ErrorPayload {
  if (error instanceof Error) {
    return {
      errorType: errorType ?? error.name,
      errorMessage: error.message,
      trace: (error.stack ?? `${error.name}: ${error.message}`).split('\n'),
    };
  }
  return { errorType: errorType ?? typeof error, errorMessage: String(error), trace: [] };
}

let handler: Handler | undefined;
let currentRequestId: string | undefined;

// Errors that escape the handler's promise chain end the sandbox, as in Lambda (the runtime restarts it).
process.on('uncaughtException', (error) => {
  if (currentRequestId !== undefined) {
    send({ type: 'error', requestId: currentRequestId, error: toErrorPayload(error), fatal: true });
  }
  process.exitCode = 129;
  setImmediate(() => process.exit(129));
});
process.on('unhandledRejection', (reason) => {
  if (currentRequestId !== undefined) {
    const payload = toErrorPayload(reason, 'Runtime.UnhandledPromiseRejection');
    send({ type: 'error', requestId: currentRequestId, error: payload, fatal: true });
  }
  setImmediate(() => process.exit(128));
});

async function init(handlerPath: string): Promise<void> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(handlerPath).href)) as Record<string, unknown>;
  } catch (error) {
    send({ type: 'init-error', error: toErrorPayload(error, 'Runtime.ImportModuleError') });
    return;
  }
  const candidate = mod['handler'] ?? (mod['default'] as Record<string, unknown> | undefined)?.['handler'];
  if (typeof candidate !== 'function') {
    send({
      type: 'init-error',
      error: {
        errorType: 'Runtime.HandlerNotFound',
        errorMessage: `${handlerPath}.handler is undefined or not exported`,
        trace: [],
      },
    });
    return;
  }
  handler = candidate as Handler;
  send({ type: 'ready' });
}

async function invoke(message: Extract<ParentMessage, { type: 'invoke' }>): Promise<void> {
  const { requestId, event, context: ctx, deadlineMs } = message;
  currentRequestId = requestId;
  const context: Record<string, unknown> = {
    ...ctx,
    awsRequestId: requestId,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - Date.now()),
    // Deprecated context methods the Node.js runtime still provides.
    done: (error?: unknown, result?: unknown) => callback(error, result),
    succeed: (result?: unknown) => callback(null, result),
    fail: (error?: unknown) => callback(error ?? new Error('handled')),
  };
  let settled = false;
  const finish = (outcome: { ok: true; value: unknown } | { ok: false; error: unknown }): void => {
    if (settled) return;
    settled = true;
    currentRequestId = undefined;
    if (!outcome.ok) {
      send({ type: 'error', requestId, error: toErrorPayload(outcome.error), fatal: false });
      return;
    }
    let body: string;
    try {
      // JSON.stringify(undefined) is undefined: Lambda answers `null` for a handler that returns nothing.
      body = JSON.stringify(outcome.value) ?? 'null';
    } catch (error) {
      send({ type: 'error', requestId, error: toErrorPayload(error, 'Runtime.SerializationError'), fatal: false });
      return;
    }
    send({ type: 'result', requestId, body });
  };
  const callback: Callback = (error, result) => {
    if (error !== undefined && error !== null) finish({ ok: false, error });
    else finish({ ok: true, value: result });
  };
  try {
    if (handler === undefined) throw new Error('handler not initialised');
    const returned = handler(event, context, callback);
    // An async (or promise-returning) handler settles through its promise; a plain function that takes
    // no callback settles with its return value; a callback-style handler (3 parameters) waits for it.
    if (returned !== null && typeof returned === 'object' && typeof (returned as Promise<unknown>).then === 'function') {
      (returned as Promise<unknown>).then(
        (value) => finish({ ok: true, value }),
        (error: unknown) => finish({ ok: false, error }),
      );
    } else if (handler.length < 3) {
      finish({ ok: true, value: returned });
    }
  } catch (error) {
    finish({ ok: false, error });
  }
}

process.on('message', (raw: ParentMessage) => {
  if (raw.type === 'init') void init(raw.handlerPath);
  else if (raw.type === 'invoke') void invoke(raw);
});
// Exit when the endpoint goes away instead of lingering as an orphan.
process.on('disconnect', () => process.exit(0));

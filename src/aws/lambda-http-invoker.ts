import { INVOKE_ANSWER_MAX_BYTES } from '../core/answer-caps.ts';
import { joinPath, serviceError, type SignedHttp } from './signed-http.ts';
import { classifyInvokeError } from '../invoke/lambda-errors.ts';
import type { FunctionInvoker, InvokeParams, InvokeResult } from '../core/function-invoker.ts';

/**
 * FunctionInvoker on the lean hot path (`--aws-client lean`): Lambda's Invoke (REST JSON,
 * POST /2015-03-31/functions/{name}/invocations) over SignedHttp. Like LambdaSdkInvoker with the SDK: one
 * attempt per call (the dispatcher's retry knows when a retry is safe), the caller's signal as the only
 * deadline, and every failure classified by classifyInvokeError (a reset after the request was sent is
 * "unknown", a refused connection "not-sent"). The payload string is sent as is, never copied into a Buffer first.
 */
export class LambdaHttpInvoker implements FunctionInvoker {
  readonly #http: SignedHttp;
  readonly #endpoint: URL;
  readonly #path: string;
  readonly #onCall: ((operation: string, err: unknown) => void) | undefined;

  constructor(http: SignedHttp, endpoint: URL, functionName: string, onCall?: (operation: string, err: unknown) => void) {
    this.#http = http;
    this.#endpoint = endpoint;
    // A name, name:alias or ARN is one path label: its colons are escaped, as the SDK does.
    this.#path = joinPath(endpoint, `/2015-03-31/functions/${encodeLabel(functionName)}/invocations`);
    this.#onCall = onCall;
  }

  invoke(payload: string, signal?: AbortSignal, params?: InvokeParams): Promise<InvokeResult> {
    return this.#send(params?.async === true ? 'Event' : 'RequestResponse', payload, signal, params);
  }

  dryRun(signal?: AbortSignal, params?: InvokeParams): Promise<InvokeResult> {
    return this.#send('DryRun', '', signal, params);
  }

  async #send(
    type: 'RequestResponse' | 'Event' | 'DryRun',
    payload: string,
    signal?: AbortSignal,
    params?: InvokeParams,
  ): Promise<InvokeResult> {
    try {
      const answer = await this.#http.post(
        this.#endpoint,
        this.#path,
        { 'content-type': 'application/octet-stream', 'x-amz-invocation-type': type, ...paramHeaders(params) },
        payload,
        signal,
        INVOKE_ANSWER_MAX_BYTES,
      );
      if (answer.status < 200 || answer.status >= 300) throw serviceError(answer);
      this.#onCall?.('Invoke', undefined);
      const functionError = answer.headers['x-amz-function-error'];
      const requestId = answer.headers['x-amzn-requestid'];
      return {
        ok: true,
        response: {
          payload: answer.body.length > 0 ? answer.body.toString('utf8') : undefined,
          functionError: typeof functionError === 'string' ? functionError : undefined,
          ...(typeof requestId === 'string' ? { requestId } : {}),
        },
      };
    } catch (err) {
      this.#onCall?.('Invoke', err);
      return { ok: false, error: classifyInvokeError(err, signal) };
    }
  }
}

/** The headers InvokeCommand's serializer makes of the params (the SDK's Lambda model names them); absent ones are not sent. */
function paramHeaders(params: InvokeParams | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (params?.durableExecutionName !== undefined) headers['x-amz-durable-execution-name'] = params.durableExecutionName;
  if (params?.tenantId !== undefined) headers['x-amz-tenant-id'] = params.tenantId;
  return headers;
}

/** The SDK's extendedEncodeURIComponent: encodeURIComponent plus !'()*. */
function encodeLabel(label: string): string {
  return encodeURIComponent(label).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

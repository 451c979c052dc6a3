import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { classifyInvokeError } from '../invoke/lambda-errors.ts';
import type { FunctionInvoker, InvokeParams, InvokeResult } from '../core/function-invoker.ts';

/**
 * FunctionInvoker on the AWS SDK's LambdaClient: `--aws-client sdk`, and the DryRun of Temporal spillover's
 * worker function, which spillover invokes through the SDK. Only loaded on those paths.
 */
const decoder = new TextDecoder();

export class LambdaSdkInvoker implements FunctionInvoker {
  readonly #client: LambdaClient;
  readonly #functionName: string;

  constructor(client: LambdaClient, functionName: string) {
    this.#client = client;
    this.#functionName = functionName;
  }

  invoke(payload: string, signal?: AbortSignal, params?: InvokeParams): Promise<InvokeResult> {
    return this.#send(params?.async === true ? 'Event' : 'RequestResponse', payload, signal, params);
  }

  dryRun(signal?: AbortSignal, params?: InvokeParams): Promise<InvokeResult> {
    return this.#send('DryRun', undefined, signal, params);
  }

  async #send(
    type: 'RequestResponse' | 'Event' | 'DryRun',
    payload: string | undefined,
    signal?: AbortSignal,
    params?: InvokeParams,
  ): Promise<InvokeResult> {
    try {
      const out = await this.#client.send(
        new InvokeCommand({
          FunctionName: this.#functionName,
          InvocationType: type,
          ...(params?.durableExecutionName !== undefined ? { DurableExecutionName: params.durableExecutionName } : {}),
          ...(payload !== undefined ? { Payload: Buffer.from(payload) } : {}),
          ...(params?.tenantId !== undefined ? { TenantId: params.tenantId } : {}),
        }),
        signal ? { abortSignal: signal } : {},
      );
      return {
        ok: true,
        response: {
          payload: out.Payload && out.Payload.length > 0 ? decoder.decode(out.Payload) : undefined,
          functionError: out.FunctionError,
          ...(out.$metadata?.requestId !== undefined ? { requestId: out.$metadata.requestId } : {}),
        },
      };
    } catch (err) {
      return { ok: false, error: classifyInvokeError(err, signal) };
    }
  }
}

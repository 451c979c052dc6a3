import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { classifyAwsError, type ClassifiedError } from '../aws-errors.ts';
import type { InvocationResponse } from './invoke-result.ts';

export type InvokeOutcome = { ok: true; response: InvocationResponse } | { ok: false; error: ClassifiedError };

/** Invokes the target function synchronously. Never throws for AWS errors: they come back classified. */
export interface FunctionInvoker {
  invoke(payload: string, signal?: AbortSignal): Promise<InvokeOutcome>;
  /** InvocationType DryRun: checks that the function exists and we may invoke it, without running it. */
  dryRun(signal?: AbortSignal): Promise<InvokeOutcome>;
}

const decoder = new TextDecoder();

export class LambdaInvoker implements FunctionInvoker {
  readonly #client: LambdaClient;
  readonly #functionName: string;

  constructor(client: LambdaClient, functionName: string) {
    this.#client = client;
    this.#functionName = functionName;
  }

  invoke(payload: string, signal?: AbortSignal): Promise<InvokeOutcome> {
    return this.#send('RequestResponse', payload, signal);
  }

  dryRun(signal?: AbortSignal): Promise<InvokeOutcome> {
    return this.#send('DryRun', undefined, signal);
  }

  async #send(type: 'RequestResponse' | 'DryRun', payload: string | undefined, signal?: AbortSignal): Promise<InvokeOutcome> {
    try {
      const out = await this.#client.send(
        new InvokeCommand({
          FunctionName: this.#functionName,
          InvocationType: type,
          ...(payload !== undefined ? { Payload: Buffer.from(payload) } : {}),
        }),
        signal ? { abortSignal: signal } : {},
      );
      return {
        ok: true,
        response: {
          payload: out.Payload && out.Payload.length > 0 ? decoder.decode(out.Payload) : undefined,
          functionError: out.FunctionError,
        },
      };
    } catch (err) {
      return { ok: false, error: classifyAwsError(err, signal) };
    }
  }
}

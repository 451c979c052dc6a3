// Durable executions on the test Lambda endpoint: what Lambda does with DurableExecutionName (header
// X-Amz-Durable-Execution-Name) on Invoke, from AWS's pages:
// - "Idempotency" (https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html), "Execution names"
//   and "Idempotency behavior": a name never used starts a new execution; a name in use with the identical payload
//   starts nothing and answers with the execution that exists ("For synchronous invocations, this acts as a
//   reattachment to the running execution"); a name in use with another payload is refused with
//   DurableExecutionAlreadyStartedException. Names are unique within the account and region.
// - The Invoke API reference (the SDK's model, InvocationRequest.DurableExecutionName): "If you invoke a durable
//   function using a name that already exists with the same payload, Lambda returns the existing execution instead
//   of creating a duplicate. If the payload differs, Lambda returns a DurableExecutionAlreadyStartedException
//   error." The SDK models that error with HTTP status 409 (DurableExecutionAlreadyStartedException$); the name must
//   be 1-64 characters of [a-zA-Z0-9-_].
// A closed execution is answered like a running one (the model keeps every execution, as within the retention
// period). Tests read `executions`: every execution started, by name, with the invocation that runs it and how
// often its name was used again.
import { createHash } from 'node:crypto';
import type { InvocationRecord } from './server.ts';

/** What a synchronous caller is answered once the execution ends. */
export interface ExecutionAnswer {
  readonly body: string;
  readonly functionError: boolean;
}

export interface DurableExecution {
  readonly name: string;
  /** SHA-256 of the request payload that started it. */
  readonly payloadHash: string;
  /** The invocation that runs it (its handler ran once, for this execution). */
  readonly invocation: InvocationRecord;
  /** Later starts under the name with the identical payload, answered with this execution. */
  reattached: number;
  /** Later starts under the name with another payload, refused with DurableExecutionAlreadyStartedException. */
  refused: number;
  /** Resolves when the execution ends. */
  readonly ended: Promise<ExecutionAnswer>;
}

/** How a start under a name is answered: start a new execution, answer with the one that exists, or refuse. */
export type Admission =
  | { kind: 'new'; payloadHash: string }
  | { kind: 'existing'; execution: DurableExecution }
  | { kind: 'refused'; statusCode: number; errorType: string; message: string };

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export class DurableExecutions {
  /** Every execution started, by name. */
  readonly executions = new Map<string, DurableExecution>();

  /** What a start under `name` with `payload` (the request body) gets. */
  admit(name: string, payload: Buffer | undefined): Admission {
    if (!NAME.test(name)) {
      return {
        kind: 'refused',
        statusCode: 400,
        errorType: 'ValidationException',
        message: `1 validation error detected: Value '${name}' at 'durableExecutionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9-_]+`,
      };
    }
    const payloadHash = createHash('sha256')
      .update(payload ?? Buffer.alloc(0))
      .digest('hex');
    const execution = this.executions.get(name);
    if (execution === undefined) return { kind: 'new', payloadHash };
    if (execution.payloadHash === payloadHash) {
      execution.reattached++;
      return { kind: 'existing', execution };
    }
    execution.refused++;
    return {
      kind: 'refused',
      statusCode: 409,
      errorType: 'DurableExecutionAlreadyStartedException',
      message: `Durable execution with name ${name} already exists with a different payload`,
    };
  }

  /** Records the execution a new start began; call `end` with its answer when its invocation is over. */
  started(name: string, payloadHash: string, invocation: InvocationRecord): { end: (answer: ExecutionAnswer) => void } {
    let end!: (answer: ExecutionAnswer) => void;
    const ended = new Promise<ExecutionAnswer>((resolve) => (end = resolve));
    this.executions.set(name, { name, payloadHash, invocation, reattached: 0, refused: 0, ended });
    return { end };
  }

  reset(): void {
    this.executions.clear();
  }
}

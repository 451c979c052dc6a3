// The example worker handler, killed CRASH_AFTER_MS after it starts: the process exits as it would on an
// out-of-memory kill, with no shutdown and no answer. Used by spillover-v2.test.ts to prove crash replacement.
import { handler as exampleHandler, type LambdaContext } from '../../../examples/temporal-lambda-worker/handler.ts';

export async function handler(event: unknown, context: LambdaContext): Promise<unknown> {
  const after = Number(process.env['CRASH_AFTER_MS'] ?? '2000');
  setTimeout(() => process.exit(137), after).unref();
  return exampleHandler(event, context);
}

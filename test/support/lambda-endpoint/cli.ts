// Standalone Lambda Invoke endpoint for the demo and the Docker test.
//   node test/support/lambda-endpoint/cli.ts --port 9001 \
//     --function name=/abs/path/handler.mjs[,timeout=5][,reserved=2][,memory=256][,env.KEY=VALUE] ...
// stdout: one JSON line {"url":...} once listening, then one JSON line per finished invocation or rejected
// request. Handler output goes to stderr. Stops on SIGTERM/SIGINT (exit 0).
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startLambdaEndpoint, type FunctionSpec, type InvocationRecord } from './server.ts';

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: node test/support/lambda-endpoint/cli.ts [--port N] [--host H] [--log-payloads] ` +
      `--function name=/path/handler.mjs[,timeout=SEC][,reserved=N][,memory=MB][,env.KEY=VALUE] ...\n`,
  );
  process.exit(2);
}

function parseFunction(text: string): [string, FunctionSpec] {
  const [first, ...rest] = text.split(',');
  const eq = first?.indexOf('=') ?? -1;
  if (first === undefined || eq <= 0) usage(`--function must start with name=/path/handler, got "${text}"`);
  const name = first.slice(0, eq);
  const spec: FunctionSpec = { handler: resolve(first.slice(eq + 1)) };
  for (const option of rest) {
    const i = option.indexOf('=');
    const key = option.slice(0, i);
    const value = option.slice(i + 1);
    const number = Number(value);
    if (key === 'timeout' && number > 0) spec.timeoutSec = number;
    else if (key === 'reserved' && Number.isInteger(number) && number >= 0) spec.reservedConcurrency = number;
    else if (key === 'memory' && Number.isInteger(number) && number > 0) spec.memoryMb = number;
    else if (key.startsWith('env.') && key.length > 4) spec.env = { ...spec.env, [key.slice(4)]: value };
    else usage(`--function ${name}: cannot use option "${option}"`);
  }
  return [name, spec];
}

/** The SQS message ids of an event, so logs identify what ran without printing bodies. */
function messageIds(payload: unknown): string[] | undefined {
  const records = (payload as { Records?: unknown } | null)?.Records;
  if (!Array.isArray(records)) return undefined;
  return records.map((r) => String((r as { messageId?: unknown }).messageId));
}

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    function: { type: 'string', multiple: true, default: [] },
    'log-payloads': { type: 'boolean', default: false },
  },
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) usage(`--port must be an integer from 0 to 65535, got "${values.port}"`);
if (values.function.length === 0) usage('at least one --function is required');

const line = (object: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify(object)}\n`);
};

const endpoint = await startLambdaEndpoint({
  port,
  host: values.host,
  functions: Object.fromEntries(values.function.map(parseFunction)),
  onInvocation(record: InvocationRecord) {
    line({
      event: 'invocation',
      requestId: record.requestId,
      functionName: record.functionName,
      qualifier: record.qualifier,
      invocationType: record.invocationType,
      status: record.status,
      coldStart: record.coldStart,
      durationMs: (record.endedAt ?? Date.now()) - record.startedAt,
      payloadBytes: record.payloadBytes,
      messageIds: messageIds(record.payload),
      ...(values['log-payloads'] ? { payload: record.payload, result: record.result } : {}),
      ...(record.error === undefined ? {} : { errorType: record.error.errorType, errorMessage: record.error.errorMessage }),
    });
  },
  onRejected(rejected) {
    line({ event: 'rejected', ...rejected });
  },
});
line({ url: endpoint.url });

let stopping = false;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) process.exit(1);
    stopping = true;
    endpoint.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

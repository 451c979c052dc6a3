// Preloaded into a consumer under benchmark (`node --import ./bench/support/sdk-call-counter.ts ...`): counts
// the HTTP requests its AWS SDK clients start, by operation, using Node's diagnostics channel (one counter
// increment per request; the consumer's code is untouched). On SIGUSR2 it writes
// {"seq":n,"calls":{"ReceiveMessage":..,"Invoke":..}} to the file named by BENCH_CALLS_FILE, synchronously,
// so the benchmark can take a snapshot at the start and at the end of its measurement window.
import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import type { ClientRequest } from 'node:http';

const file = process.env['BENCH_CALLS_FILE'];
const calls: Record<string, number> = {};
let seq = 0;

function operation(request: ClientRequest): string {
  // SQS speaks AWS JSON 1.0: the operation is in X-Amz-Target ("AmazonSQS.ReceiveMessage").
  const target = request.getHeader('x-amz-target');
  if (typeof target === 'string') return target.slice(target.indexOf('.') + 1);
  // Lambda is REST: POST /2015-03-31/functions/{name}/invocations.
  if (/\/functions\/[^/]+\/invocations/.test(request.path)) return 'Invoke';
  return `${request.method} ${request.path.split('?')[0] ?? ''}`;
}

if (file !== undefined) {
  subscribe('http.client.request.start', (message) => {
    const op = operation((message as { request: ClientRequest }).request);
    calls[op] = (calls[op] ?? 0) + 1;
  });
  process.on('SIGUSR2', () => {
    seq += 1;
    writeFileSync(file, JSON.stringify({ seq, calls }));
  });
}

// Preloaded into a consumer under benchmark (`node --import ./bench/support/sdk-call-counter.ts ...`): counts
// the HTTP requests it starts, by operation, using the diagnostics channels of Node's HTTP client
// (`http.client.request.start`), of undici (`undici:request:create`) and of the lean path's HTTP client
// (`workerless:http1:request:start`, src/aws/http1-pool.ts): one
// counter increment per request, the consumer's code untouched. It also samples the V8 heap every 250 ms
// (an unref'd timer) and keeps the peak. On SIGUSR2 it writes
// {"seq":n,"calls":{"ReceiveMessage":..,"Invoke":..},"heap":{"peakUsedMiB":..,"usedMiB":..}} to the file named
// by BENCH_CALLS_FILE, synchronously, so the benchmark can take a snapshot at both ends of its window.
import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import type { ClientRequest } from 'node:http';

const file = process.env['BENCH_CALLS_FILE'];
const calls: Record<string, number> = {};
let seq = 0;

function operation(target: string | undefined, path: string, method: string): string {
  // SQS and CloudWatch speak AWS JSON 1.0: the operation is in X-Amz-Target ("AmazonSQS.ReceiveMessage").
  if (target !== undefined) return target.slice(target.indexOf('.') + 1);
  // Lambda is REST: POST /2015-03-31/functions/{name}/invocations.
  if (/\/functions\/[^/]+\/invocations/.test(path)) return 'Invoke';
  return `${method} ${path.split('?')[0] ?? ''}`;
}

function count(op: string): void {
  calls[op] = (calls[op] ?? 0) + 1;
}

/** undici keeps request headers as a flat [name, value, ...] array or as one "name: value\r\n" string. */
function undiciTarget(headers: unknown): string | undefined {
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === 'x-amz-target') return String(headers[i + 1]);
    }
    return undefined;
  }
  if (typeof headers === 'string') return /x-amz-target:\s*([^\r\n]+)/i.exec(headers)?.[1];
  return undefined;
}

const MiB = 1024 * 1024;
let peakHeapUsed = 0;
function sampleHeap(): number {
  const used = process.memoryUsage().heapUsed;
  if (used > peakHeapUsed) peakHeapUsed = used;
  return used;
}

if (file !== undefined) {
  subscribe('http.client.request.start', (message) => {
    const request = (message as { request: ClientRequest }).request;
    const target = request.getHeader('x-amz-target');
    count(operation(typeof target === 'string' ? target : undefined, request.path, request.method));
  });
  subscribe('undici:request:create', (message) => {
    const request = (message as { request: { method: string; path: string; headers: unknown } }).request;
    count(operation(undiciTarget(request.headers), request.path, request.method));
  });
  subscribe('workerless:http1:request:start', (message) => {
    const request = message as { method: string; path: string; headers: Readonly<Record<string, string>> };
    count(operation(request.headers['x-amz-target'], request.path, request.method));
  });
  setInterval(sampleHeap, 250).unref();
  process.on('SIGUSR2', () => {
    seq += 1;
    const used = sampleHeap();
    writeFileSync(file, JSON.stringify({ seq, calls, heap: { peakUsedMiB: peakHeapUsed / MiB, usedMiB: used / MiB } }));
  });
}

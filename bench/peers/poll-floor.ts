// The floor of holding N long polls: bare node:http, one keep-alive socket per poll, unsigned ReceiveMessage
// bodies, no SDK, no retries, no deadlines, nothing but the request and its answer, each poll sent again when
// it ends. What a Node process pays for N connections with a request open on each, whoever holds them; the daemon's
// figure beside it (bench/many-queues.ts) is what workerless adds.
//
//   node --max-semi-space-size=8 --heap-growing-percent=10 bench/peers/poll-floor.ts <endpoint> <seconds> <queue URL>...
//   (queue URLs one per line on stdin when none are given)
//
// Sends 250 polls per 5 ms at the start (as the daemon paces them), then prints {"polls","peakRssMiB","rssMiB"}.
import http from 'node:http';
import { readFileSync } from 'node:fs';

const [endpoint, seconds, ...given] = process.argv.slice(2);
const urls = given.length > 0 ? given : readFileSync(0, 'utf8').split('\n').filter(Boolean);
const target = new URL(endpoint!);
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
let answered = 0;

function poll(url: string): void {
  const body = JSON.stringify({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 20 });
  const req = http.request(
    {
      agent,
      hostname: target.hostname,
      port: target.port,
      method: 'POST',
      path: '/',
      // A flat list, as the daemon sends it (node:http then adds no Host of its own).
      headers: [
        'host',
        target.host,
        'content-type',
        'application/x-amz-json-1.0',
        'x-amz-target',
        'AmazonSQS.ReceiveMessage',
        'content-length',
        String(Buffer.byteLength(body)),
      ],
    },
    (res) => {
      res.resume();
      res.on('end', () => {
        answered += 1;
        poll(url);
      });
    },
  );
  req.on('error', () => setTimeout(() => poll(url), 1_000));
  req.end(body);
}

let next = 0;
const turn = () => {
  for (let k = 0; k < 250 && next < urls.length; k++) poll(urls[next++]!);
  if (next < urls.length) setTimeout(turn, 5);
};
turn();

setTimeout(
  () => {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
    process.stdout.write(
      `${JSON.stringify({ polls: urls.length, answered, peakRssMiB: kb('VmHWM') / 1024, rssMiB: kb('VmRSS') / 1024 })}\n`,
    );
    process.exit(0);
  },
  Number(seconds) * 1000,
);

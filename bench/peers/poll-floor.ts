// The floor of holding N long polls: one keep-alive socket per poll, unsigned ReceiveMessage bodies, no SDK, no
// retries, no deadlines, nothing but the request and its answer, each poll sent again when it ends. What a Node
// process pays for N connections with a request open on each, whoever holds them; the daemon's figure beside it
// (bench/many-queues.ts) is what workerless adds.
//
//   node --max-semi-space-size=8 --heap-growing-percent=10 bench/peers/poll-floor.ts net|net-shared|http <endpoint> <seconds> <queue URL>...
//   (queue URLs one per line on stdin when none are given)
//
//   net   bare net.Socket, the answer framed by its Content-Length: the least any client can hold a poll with (the
//         floor of the daemon's transport, src/aws/http1-pool.ts)
//   http  node:http with a keep-alive Agent (what the SDK's NodeHttpHandler, and the daemon until it had its own
//         transport, hold a poll with)
//   net-shared  over TLS, bare tls.connect with one tls.createSecureContext() shared by every socket (as the daemon's
//         transport holds its sockets, src/aws/network.ts secureContext; without one, tls.connect builds a context
//         per socket). No session reuse: each socket makes a full handshake. Over plain HTTP the same as net.
//   With an https:// endpoint, the same over TLS: tls.connect (a context per socket, and shared) and node:https
//   (trust a test certificate with NODE_EXTRA_CA_CERTS: the shared context takes it too).
//
// Sends 250 polls per 5 ms at the start (as the daemon paces them), then prints {"polls","answered","peakRssMiB","rssMiB"}.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';

const [transport, endpoint, seconds, ...given] = process.argv.slice(2);
if (transport !== 'net' && transport !== 'net-shared' && transport !== 'http') {
  process.stderr.write('usage: node bench/peers/poll-floor.ts net|net-shared|http <endpoint> <seconds> [queue URL...]\n');
  process.exit(2);
}
const urls = given.length > 0 ? given : readFileSync(0, 'utf8').split('\n').filter(Boolean);
const target = new URL(endpoint!);
const secure = target.protocol === 'https:';
const agent = new (secure ? https : http).Agent({ keepAlive: true, maxSockets: Infinity });
/** net-shared over TLS: the one context every socket shares (the default CAs and NODE_EXTRA_CA_CERTS, as tls.connect's own). */
const sharedContext = secure && transport === 'net-shared' ? tls.createSecureContext() : undefined;
let answered = 0;

/** A flat header list, as the daemon sends it (node:http then adds no Host of its own). */
function headers(body: string): string[] {
  return [
    'host',
    target.host,
    'content-type',
    'application/x-amz-json-1.0',
    'x-amz-target',
    'AmazonSQS.ReceiveMessage',
    'content-length',
    String(Buffer.byteLength(body)),
  ];
}

const bodyOf = (url: string) => JSON.stringify({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 20 });

function pollHttp(url: string): void {
  const body = bodyOf(url);
  const req = (secure ? https : http).request(
    { agent, hostname: target.hostname, port: target.port, method: 'POST', path: '/', headers: headers(body) },
    (res) => {
      res.resume();
      res.on('end', () => {
        answered += 1;
        pollHttp(url);
      });
    },
  );
  req.on('error', () => setTimeout(() => pollHttp(url), 1_000));
  req.end(body);
}

function pollNet(url: string): void {
  const body = bodyOf(url);
  const h = headers(body);
  let request = 'POST / HTTP/1.1\r\n';
  for (let i = 0; i < h.length; i += 2) request += `${h[i]}: ${h[i + 1]}\r\n`;
  request += `connection: keep-alive\r\n\r\n${body}`;
  const port = Number(target.port || (secure ? 443 : 80));
  const socket = secure
    ? tls.connect({
        host: target.hostname,
        port,
        servername: target.hostname,
        ...(sharedContext ? { secureContext: sharedContext } : {}),
      })
    : net.connect(port, target.hostname);
  socket.setNoDelay(true);
  let read = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    read = Buffer.concat([read, chunk]);
    const head = read.indexOf('\r\n\r\n');
    if (head < 0) return;
    const length = Number(/content-length: *(\d+)/i.exec(read.toString('latin1', 0, head))?.[1] ?? 0);
    if (read.length - head - 4 < length) return;
    read = read.subarray(head + 4 + length);
    answered += 1;
    socket.write(request);
  });
  socket.on('error', () => setTimeout(() => pollNet(url), 1_000));
  socket.write(request);
}

const poll = transport === 'http' ? pollHttp : pollNet;
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

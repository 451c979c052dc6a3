// The lean transport's socket pool on real sockets: a burst of calls larger than Node's default of 256 free
// sockets is answered, and the next burst reuses every socket instead of connecting again; the pacer lets a
// burst's first requests reach the server while later ones are still being started.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { CallPacer } from '../../../src/aws/call-pacer.ts';
import { SignedHttp } from '../../../src/aws/signed-http.ts';
import { RecordingServer } from '../../support/recording-server.ts';

const credentials = () => Promise.resolve({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' });
const BURST = 400;

describe('SignedHttp socket pool', () => {
  const server = new RecordingServer();
  let origin: URL;
  /** Answers held until the whole burst has arrived, so that every call of a burst is open at once. */
  let held: ServerResponse[] = [];
  before(async () => {
    server.handler = (_req, res) => {
      held.push(res);
      if (held.length === BURST) {
        for (const r of held) r.end('{}');
        held = [];
      }
    };
    origin = await server.listen();
  });
  after(() => server.close());

  const burst = (http: SignedHttp) =>
    Promise.all(Array.from({ length: BURST }, () => http.post(origin, '/', { 'content-type': 'application/json' }, '{}', undefined, 1024)));

  it(`keeps all ${BURST} sockets of a burst for the next one (Node's default keeps 256)`, async () => {
    const http = new SignedHttp({ service: 'sqs', region: 'us-east-1', credentials, maxSockets: BURST + 16 });
    try {
      server.connections = 0;
      const first = await burst(http);
      assert.equal(first.length, BURST);
      assert.ok(first.every((a) => a.status === 200));
      assert.equal(server.connections, BURST);
      await burst(http);
      assert.equal(server.connections, BURST, 'the second burst connected again');
    } finally {
      http.destroy();
    }
  });

  it('with a pacer, sends the first calls of a burst before the last ones are started', async () => {
    const pacer = new CallPacer(20);
    const http = new SignedHttp({ service: 'sqs', region: 'us-east-1', credentials, maxSockets: BURST + 16, pacer });
    try {
      server.seen.length = 0;
      let waitingAtFirstArrival = -1;
      const hold = server.handler;
      server.handler = (req, res) => {
        if (waitingAtFirstArrival < 0) waitingAtFirstArrival = pacer.waiting;
        hold(req, res);
      };
      await Promise.all(Array.from({ length: BURST }, () => http.post(origin, '/', {}, '{}', undefined, 1024)));
      // Unpaced, every call is started (and has passed the pacer) before the first request is written.
      assert.ok(waitingAtFirstArrival > 0, `calls still waiting when the first request arrived: ${waitingAtFirstArrival}`);
      assert.equal(server.seen.length, BURST);
    } finally {
      http.destroy();
    }
  });
});

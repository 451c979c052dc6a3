import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  HTTP_MAX_CONNECTIONS,
  RESERVED_FDS,
  awsSocketCeiling,
  fdBudget,
  pollBudget,
  socketBudget,
  socketsPerHost,
} from '../../../src/daemon/socket-budget.ts';

describe('the file-descriptor budget', () => {
  it('counts SQS and Lambda at maxSockets each, and one CloudWatch socket', () => {
    // --concurrency 10: socketsPerHost gives each host 10 + 16 sockets.
    assert.equal(awsSocketCeiling(26), 53);
  });

  it('sizes the pool at one socket per worker loop of every route, and 16 more per host', () => {
    assert.equal(socketsPerHost(10), 26);
    assert.equal(socketsPerHost(2 + 3), 21);
    assert.equal(awsSocketCeiling(socketsPerHost(100)), 233);
  });

  it('gives the server its full cap, without a warning, when the limit covers the AWS sockets, the reserve and the server', () => {
    const needed = 53 + RESERVED_FDS + HTTP_MAX_CONNECTIONS + 1;
    assert.deepEqual(fdBudget({ openFileLimit: needed, awsSockets: 53, httpServer: true }), {
      httpMaxConnections: HTTP_MAX_CONNECTIONS,
      needed,
    });
    // The 300-descriptor limit at the default --concurrency 10 is enough.
    assert.equal(fdBudget({ openFileLimit: 300, awsSockets: 53, httpServer: true }).shortfall, undefined);
    // Unknown limit (not Linux): the fixed cap.
    assert.deepEqual(fdBudget({ openFileLimit: undefined, awsSockets: 20_033, httpServer: true }).httpMaxConnections, HTTP_MAX_CONNECTIONS);
  });

  it('shrinks the server to what the AWS sockets leave (at least 4) and names the numbers when the limit is too low', () => {
    // --concurrency 100: 2 x 116 + 1 = 233 AWS sockets; 233 + 64 + 33 = 330 needed under a limit of 310.
    assert.deepEqual(fdBudget({ openFileLimit: 310, awsSockets: 233, httpServer: true }), {
      httpMaxConnections: 310 - 233 - RESERVED_FDS - 1,
      needed: 330,
      shortfall: { openFileLimit: 310, awsSockets: 233, reservedFds: RESERVED_FDS, httpMaxConnections: 12, needed: 330 },
    });
    // Nothing left: probes still get 4.
    assert.equal(fdBudget({ openFileLimit: 300, awsSockets: 2_033, httpServer: true }).httpMaxConnections, 4);
    // Without the server the pool alone is still checked.
    assert.deepEqual(fdBudget({ openFileLimit: 1_024, awsSockets: 2_033, httpServer: false }).shortfall, {
      openFileLimit: 1_024,
      awsSockets: 2_033,
      reservedFds: RESERVED_FDS,
      httpMaxConnections: 0,
      needed: 2_033 + RESERVED_FDS,
    });
  });
});

describe('pollBudget: idle long polls in flight, as far as the open-file limit allows', () => {
  it('a 20,000 limit at --concurrency 10 leaves room for 10,000 queues, one poll each', () => {
    assert.ok(pollBudget({ openFileLimit: 20_000, loops: 10, httpServer: true }) >= 10_000);
  });

  it('the polls get what is left after the loops, the HTTP server and the reserve', () => {
    // 1,024 - 64 reserved - 33 HTTP - 1 CloudWatch - 2 x 26 loop sockets = 874.
    assert.equal(pollBudget({ openFileLimit: 1_024, loops: 10, httpServer: true }), 874);
    assert.equal(pollBudget({ openFileLimit: 1_024, loops: 10, httpServer: false }), 907);
  });

  it('at least one, even below what the loops need (the start-up warns of that), and no cap when the limit is unknown', () => {
    assert.equal(pollBudget({ openFileLimit: 100, loops: 10, httpServer: true }), 1);
    assert.equal(pollBudget({ openFileLimit: undefined, loops: 10, httpServer: true }), Infinity);
  });
});

describe('socketBudget: the run sized as one', () => {
  it('the polls take what the loops, the server and the reserve leave, so the whole fits the limit exactly', () => {
    const budget = socketBudget({ openFileLimit: 1_024, loops: 10, httpServer: true });
    assert.deepEqual(
      { perHost: budget.perHost, polls: budget.polls, sqsPerHost: budget.sqsPerHost },
      { perHost: 26, polls: 874, sqsPerHost: 26 + 874 },
    );
    // 900 SQS + 26 Lambda + 1 CloudWatch + 64 reserved + 33 HTTP = 1,024: no shortfall, the server's full cap.
    assert.deepEqual(budget.fds, { httpMaxConnections: HTTP_MAX_CONNECTIONS, needed: 1_024 });
  });

  it('below what the loops need: one poll, the server at its least, and the shortfall named', () => {
    const budget = socketBudget({ openFileLimit: 100, loops: 10, httpServer: true });
    assert.equal(budget.polls, 1);
    assert.equal(budget.sqsPerHost, 27);
    assert.deepEqual(budget.fds.shortfall, {
      openFileLimit: 100,
      awsSockets: 27 + 26 + 1,
      reservedFds: RESERVED_FDS,
      httpMaxConnections: 4,
      needed: 27 + 26 + 1 + RESERVED_FDS + HTTP_MAX_CONNECTIONS + 1,
    });
  });

  it('no limit known: a poll for every queue and the server at its cap', () => {
    const budget = socketBudget({ openFileLimit: undefined, loops: 10, httpServer: false });
    assert.equal(budget.polls, Infinity);
    assert.equal(budget.fds.shortfall, undefined);
    assert.equal(budget.fds.httpMaxConnections, HTTP_MAX_CONNECTIONS);
  });
});

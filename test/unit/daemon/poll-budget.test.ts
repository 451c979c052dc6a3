import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pollBudget, routePolls } from '../../../src/daemon/poll-budget.ts';

describe('pollBudget: one idle long poll per queue, as far as the open-file limit allows', () => {
  it('10,000 queues at --concurrency 10 fit under a 20,000 limit: one poll each', () => {
    assert.equal(pollBudget({ openFileLimit: 20_000, loops: 10, queues: 10_000, httpServer: true }), 10_000);
  });

  it('under a lower limit the polls are capped to what is left after the loops, the HTTP server and the reserve', () => {
    // 1,024 - 64 reserved - 33 HTTP - 1 CloudWatch - 2 x 26 loop sockets = 874.
    assert.equal(pollBudget({ openFileLimit: 1_024, loops: 10, queues: 10_000, httpServer: true }), 874);
    assert.equal(pollBudget({ openFileLimit: 1_024, loops: 10, queues: 10_000, httpServer: false }), 907);
  });

  it('never fewer than one per loop, and no cap when the limit is unknown', () => {
    assert.equal(pollBudget({ openFileLimit: 100, loops: 10, queues: 500, httpServer: true }), 10);
    assert.equal(pollBudget({ openFileLimit: undefined, loops: 10, queues: 500, httpServer: true }), 500);
  });

  it('routePolls: each route its share by queues, at least one, at most its queues', () => {
    assert.equal(routePolls(874, 9_000, 10_000), 786);
    assert.equal(routePolls(874, 1_000, 10_000), 87);
    assert.equal(routePolls(10_000, 3, 10_000), 3);
    assert.equal(routePolls(10, 1, 10_000), 1);
    assert.equal(routePolls(10, 0, 0), 1);
  });
});

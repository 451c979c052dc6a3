// A TLS or proxy fault in one line (src/core/errors.ts connectionFault, src/check/check-errors.ts): each of Node's
// error shapes for a certificate or a proxy is told by its cause, naming what to fix, wherever the error sits (the
// error itself, its cause, an AggregateError of the addresses tried), and never for an answer the service gave.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyAwsError, connectionFault, markConnectionFacts, unreachableReason } from '../../../src/core/errors.ts';
import { explainAwsError } from '../../../src/check/check-errors.ts';

const nodeError = (code: string, message: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { code, ...extra });

describe('TLS and proxy faults', () => {
  it('names the cause of each certificate refusal, and what to do', () => {
    assert.deepEqual(connectionFault(nodeError('CERT_NOT_YET_VALID', 'certificate is not yet valid')), {
      code: 'CERT_NOT_YET_VALID',
      text: "its certificate is not valid yet (CERT_NOT_YET_VALID; or this machine's clock is wrong)",
    });
    assert.deepEqual(connectionFault(nodeError('ERR_SSL_WRONG_VERSION_NUMBER', 'wrong version number')), {
      code: 'ERR_SSL_WRONG_VERSION_NUMBER',
      text: 'the TLS handshake failed (ERR_SSL_WRONG_VERSION_NUMBER: wrong version number; does it speak plain http?)',
    });
    assert.equal(
      connectionFault(nodeError('ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE', 'alert'))?.text,
      'the TLS handshake failed (ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE: alert)',
    );
    const untrusted = markConnectionFacts(nodeError('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain'), {
      trust: 'the CA bundle /etc/corp.pem (AWS_CA_BUNDLE)',
    });
    assert.equal(
      connectionFault(untrusted)?.text,
      'its certificate is not trusted by the CA bundle /etc/corp.pem (AWS_CA_BUNDLE) (SELF_SIGNED_CERT_IN_CHAIN: self-signed certificate in certificate chain)',
    );
  });

  it('finds the fault in a cause or an AggregateError, and not in other errors', () => {
    const inner = nodeError('CERT_HAS_EXPIRED', 'certificate has expired');
    assert.equal(connectionFault(new Error('wrapped', { cause: inner }))?.code, 'CERT_HAS_EXPIRED');
    assert.equal(connectionFault(new AggregateError([new Error('x'), inner]))?.code, 'CERT_HAS_EXPIRED');
    assert.equal(connectionFault(nodeError('ECONNREFUSED', 'connect ECONNREFUSED')), undefined, 'refused by the endpoint itself: no proxy');
    assert.equal(connectionFault('text'), undefined);
  });

  it('is a not-sent retryable error, unless the service answered or the call was aborted', () => {
    const e = classifyAwsError(nodeError('CERT_HAS_EXPIRED', 'certificate has expired'));
    assert.deepEqual(e, {
      kind: 'retryable',
      code: 'CERT_HAS_EXPIRED',
      message: 'certificate has expired',
      notSent: true,
      fault: "its certificate has expired (CERT_HAS_EXPIRED; or this machine's clock is wrong)",
    });
    assert.equal(unreachableReason(e), e.fault);
    const answered = Object.assign(nodeError('CERT_HAS_EXPIRED', 'x'), { $metadata: { httpStatusCode: 400 } });
    assert.equal(classifyAwsError(answered).fault, undefined);
  });

  it("is the check's line: the endpoint and the fault, without the network hint", () => {
    const e = classifyAwsError(
      nodeError('ERR_TLS_CERT_ALTNAME_INVALID', 'does not match', { reason: "Host: a. is not in the cert's altnames: DNS:b" }),
    );
    assert.deepEqual(explainAwsError(e, 'SQS', ['sqs:GetQueueUrl'], 'https://a:443'), {
      detail:
        "cannot reach SQS at https://a:443: its certificate is not for this host (ERR_TLS_CERT_ALTNAME_INVALID: Host: a. is not in the cert's altnames: DNS:b)",
      unreachable: {
        service: 'SQS at https://a:443',
        reason: "its certificate is not for this host (ERR_TLS_CERT_ALTNAME_INVALID: Host: a. is not in the cert's altnames: DNS:b)",
      },
    });
  });
});

// The TLS phase (scripts/test.sh tls): the SQS- and Lambda-facing tests that matter most run again over HTTPS, as
// real SQS and Lambda speak. test/support/tls-phase-servers.ts makes a private CA and a certificate for localhost,
// puts TLS in front of ElasticMQ and moto, pins the certificate LocalStack serves on its own HTTPS port, and writes
// the folder this module reads (WORKERLESS_TEST_TLS_DIR). In that phase:
//   - the daemon is told to trust the CA the way a user is (AWS_CA_BUNDLE names the bundle; nothing else);
//   - the test Lambda endpoint and the fault proxy serve HTTPS with the phase's certificate;
//   - the test process itself (its SDK clients, fetch) trusts the bundle through trust-phase-ca.ts, a preload that
//     the daemon it starts does not inherit.
// Outside the phase phaseTls() is undefined and every helper speaks plain HTTP as before.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface PhaseTls {
  /** The phase's server key and certificate (for localhost and 127.0.0.1), PEM. */
  readonly key: string;
  readonly cert: string;
  /** The CA bundle (the private CA and LocalStack's own certificate): what AWS_CA_BUNDLE names. */
  readonly bundlePath: string;
}

/** The files tls-phase-servers.ts writes in its folder. */
export const PHASE_FILES = { key: 'server.key', cert: 'server.pem', bundle: 'bundle.pem', env: 'env' } as const;

/** The phase's TLS material when scripts/test.sh runs the TLS phase (WORKERLESS_TEST_TLS_DIR), else undefined. */
export function phaseTls(): PhaseTls | undefined {
  const dir = process.env['WORKERLESS_TEST_TLS_DIR'];
  if (dir === undefined || dir === '') return undefined;
  return {
    key: readFileSync(join(dir, PHASE_FILES.key), 'utf8'),
    cert: readFileSync(join(dir, PHASE_FILES.cert), 'utf8'),
    bundlePath: join(dir, PHASE_FILES.bundle),
  };
}

/** The certificates of a PEM bundle, one PEM text each. */
export function pemCertificates(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

// A private CA and the certificates it signs, made at test time with openssl (Debian's, installed by the test itself
// when missing), and TLS servers that use them: what a test needs to talk HTTPS to a local SQS or Lambda the way a
// user behind a private CA would (AWS_CA_BUNDLE names the CA's certificate). Nothing is committed: each CA lives in a
// temporary folder of its own and is gone with remove(). Reusable by any test: a CA, a server certificate for
// localhost and 127.0.0.1 (or other names, or already expired), the bundle path, and a TLS terminator in front of any
// plain TCP server (ElasticMQ on 9324, the test Lambda endpoint).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';

/** A key and the certificate for it, as PEM text and as files. */
export interface KeyAndCert {
  readonly key: string;
  readonly cert: string;
  readonly keyPath: string;
  readonly certPath: string;
}

export interface ServerCertOptions {
  /** DNS names in the certificate; default `localhost`. */
  readonly names?: readonly string[];
  /** IP addresses in the certificate; default `127.0.0.1`. */
  readonly ips?: readonly string[];
  /** Already expired: valid until yesterday (openssl's -days -1). */
  readonly expired?: boolean;
}

export interface TestCa {
  /** The CA's folder (its key, its certificate, the certificates it signed). */
  readonly dir: string;
  /** The CA's certificate, PEM: the file AWS_CA_BUNDLE or ca_bundle names. */
  readonly bundlePath: string;
  readonly certPem: string;
  /** A new key and a certificate signed by this CA (default for localhost and 127.0.0.1, valid for 2 days). */
  serverCert(options?: ServerCertOptions): KeyAndCert;
  /** Deletes the folder. */
  remove(): void;
}

/** `openssl`, installed with apt-get when this machine lacks it (CI runs on a fresh machine, as root). */
export function ensureOpenssl(): string {
  if (spawnSync('openssl', ['version']).status === 0) return 'openssl';
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'openssl'], { stdio: 'ignore' });
  return 'openssl';
}

/** A CA of its own (EC P-256 keys, fast to make): a certificate it signs is trusted only by whoever trusts it. */
export function createTestCa(name = 'workerless test CA'): TestCa {
  const openssl = ensureOpenssl();
  const dir = mkdtempSync(join(tmpdir(), 'workerless-ca-'));
  const run = (args: string[]) => execFileSync(openssl, args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  let serial = 1;
  return {
    dir,
    bundlePath: join(dir, 'ca.pem'),
    certPem: readFileSync(join(dir, 'ca.pem'), 'utf8'),
    serverCert(options = {}) {
      const n = ++serial;
      const names = options.names ?? ['localhost'];
      const ips = options.ips ?? ['127.0.0.1'];
      const alt = [...names.map((d) => `DNS:${d}`), ...ips.map((ip) => `IP:${ip}`)].join(',');
      writeFileSync(join(dir, `s${n}.ext`), `subjectAltName=${alt}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
      run(['req', '-new', ...ec, '-keyout', `s${n}.key`, '-out', `s${n}.csr`, '-subj', `/CN=${names[0] ?? ips[0] ?? 'server'}`]);
      run([
        'x509',
        '-req',
        '-in',
        `s${n}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-set_serial',
        String(n),
        '-days',
        options.expired ? '-1' : '2',
        '-extfile',
        `s${n}.ext`,
        '-out',
        `s${n}.pem`,
      ]);
      const keyPath = join(dir, `s${n}.key`);
      const certPath = join(dir, `s${n}.pem`);
      return { key: readFileSync(keyPath, 'utf8'), cert: readFileSync(certPath, 'utf8'), keyPath, certPath };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A TLS server on 127.0.0.1 that forwards every connection, decrypted, to a plain TCP server. */
export interface TlsTerminator {
  readonly port: number;
  /** `https://localhost:<port>`: the name the default certificate carries. */
  readonly url: string;
  /** TLS connections accepted (handshake done). */
  connections: number;
  close(): Promise<void>;
}

/**
 * Terminates TLS with `cert` and pipes each connection to `upstream` (for example ElasticMQ on 127.0.0.1:9324, or
 * the test Lambda endpoint): the daemon speaks HTTPS to a real SQS implementation.
 */
export async function startTlsTerminator(
  upstream: { host?: string; port: number },
  cert: Pick<KeyAndCert, 'key' | 'cert'>,
): Promise<TlsTerminator> {
  const sockets = new Set<net.Socket>();
  const state = { connections: 0 };
  const server = tls.createServer({ key: cert.key, cert: cert.cert }, (socket) => {
    state.connections++;
    const back = net.connect({ host: upstream.host ?? '127.0.0.1', port: upstream.port });
    for (const s of [socket, back]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => sockets.delete(s));
    }
    socket.pipe(back).pipe(socket);
    socket.on('close', () => back.destroy());
    back.on('close', () => socket.destroy());
  });
  // A client that refuses the certificate closes mid-handshake: nothing to report.
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: `https://localhost:${port}`,
    get connections() {
      return state.connections;
    },
    set connections(n: number) {
      state.connections = n;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

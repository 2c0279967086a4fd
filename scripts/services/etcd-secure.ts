import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { etcdArgs, type ServerKind } from './server-kinds';
import { instancesRoot, type ServerRecord } from './service-state';

/**
 * An etcd as production runs it: TLS with client certificates (a throwaway CA made at start with openssl,
 * a server certificate for 127.0.0.1, one client certificate), and auth on, with one RBAC user per part
 * the tests play. Its ports are its own: [clientPort, peerPort].
 */
export const ETCD_SECURE = Object.freeze({
  member: 'etcd-secure',
  ports: [12389, 12390] as const,
  /** The lock namespace the library's role covers (the strategy's default). */
  prefix: 'dlock/',
  users: Object.freeze({
    /** Needed to enable auth; the tests never lock as root. */
    root: { name: 'root', password: 'root-secure-pw' },
    /** The library: a role with readwrite on the lock prefix and nothing else. */
    locks: { name: 'locksvc', password: 'locksvc-secure-pw', role: 'locksvc' },
    /** Another application of the same cluster: readwrite on its own prefix only. */
    stranger: { name: 'stranger', password: 'stranger-secure-pw', role: 'stranger', prefix: 'other/' },
    /** A user whose role lacks a permission the lock needs: read, not write, on the lock prefix. */
    readOnly: { name: 'reader', password: 'reader-secure-pw', role: 'reader' },
  }),
});

/** Where a started etcd-secure keeps its certificates (removed with the topology). */
export function etcdSecureTlsDir(): string {
  return join(instancesRoot(), ETCD_SECURE.member, 'tls');
}

/** The CA and the client certificate, as the `etcd3` client takes them (`credentials`). */
export function etcdSecureCredentials(): { rootCertificate: Buffer; certChain: Buffer; privateKey: Buffer } {
  const dir = etcdSecureTlsDir();
  return { rootCertificate: readFileSync(join(dir, 'ca.crt')), certChain: readFileSync(join(dir, 'client.crt')), privateKey: readFileSync(join(dir, 'client.key')) };
}

function run(command: string, args: readonly string[], cwd?: string): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command} ${args[0] ?? ''} failed: ${result.error?.message ?? ''}${result.stderr}`);
  return result.stdout;
}

/**
 * A throwaway CA, a server certificate for 127.0.0.1 and a client certificate, in `dir`. EC P-256 keys:
 * made in milliseconds, and valid for a day, which outlives any test run.
 */
function makeCertificates(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n');
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run('openssl', ['req', '-x509', ...key, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=lock-test-ca'], dir);
  for (const [name, serial] of [
    ['server', '1'],
    ['client', '2'],
  ] as const) {
    // The client certificate names the library's user: etcd takes the user from its CN when a request
    // carries no token (auth by certificate alone); a password login overrides it.
    const cn = name === 'server' ? '127.0.0.1' : ETCD_SECURE.users.locks.name;
    run('openssl', ['req', ...key, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`], dir);
    run('openssl', ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', serial, '-days', '1', '-extfile', `${name}.ext`, '-out', `${name}.crt`], dir);
  }
}

/**
 * etcd's command line: the single member of `etcdArgs`, with clients over TLS and client certificates
 * required; the peer URL stays plain loopback (there is no other member to talk to).
 */
export function etcdSecureArgs(record: { name: string; dir: string; ports: readonly number[] }, clusterToken: string): string[] {
  const tls = join(record.dir, 'tls');
  const plainClient = `http://127.0.0.1:${record.ports[0]}`;
  return [
    ...etcdArgs(record, [record], clusterToken).map((arg) => (arg === plainClient ? `https://127.0.0.1:${record.ports[0]}` : arg)),
    '--cert-file', join(tls, 'server.crt'),
    '--key-file', join(tls, 'server.key'),
    '--trusted-ca-file', join(tls, 'ca.crt'),
    '--client-cert-auth',
  ];
}

/** GET over TLS with the client certificate; the body, or null when it fails or takes over `timeoutMs`. */
function httpsGet(port: number, path: string, tls: string, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, path, ca: readFileSync(join(tls, 'ca.crt')), cert: readFileSync(join(tls, 'client.crt')), key: readFileSync(join(tls, 'client.key')), timeout: timeoutMs },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve(body));
        response.on('error', () => resolve(null));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
    req.end();
  });
}

/**
 * The users and roles, then auth on: the recipe of docs/security.md, line for line. Runs
 * over TLS with the client certificate, as root once auth is on.
 */
function grantRoles(record: ServerRecord): void {
  const tls = join(record.dir, 'tls');
  const etcdctl = (...args: string[]): string =>
    run('etcdctl', [`--endpoints=https://127.0.0.1:${record.ports[0]}`, `--cacert=${join(tls, 'ca.crt')}`, `--cert=${join(tls, 'client.crt')}`, `--key=${join(tls, 'client.key')}`, ...args]);
  const { root, locks, stranger, readOnly } = ETCD_SECURE.users;
  etcdctl('user', 'add', `${root.name}:${root.password}`);
  etcdctl('user', 'grant-role', root.name, 'root');
  etcdctl('role', 'add', locks.role);
  etcdctl('role', 'grant-permission', locks.role, '--prefix=true', 'readwrite', ETCD_SECURE.prefix);
  etcdctl('user', 'add', `${locks.name}:${locks.password}`);
  etcdctl('user', 'grant-role', locks.name, locks.role);
  etcdctl('role', 'add', stranger.role);
  etcdctl('role', 'grant-permission', stranger.role, '--prefix=true', 'readwrite', stranger.prefix);
  etcdctl('user', 'add', `${stranger.name}:${stranger.password}`);
  etcdctl('user', 'grant-role', stranger.name, stranger.role);
  etcdctl('role', 'add', readOnly.role);
  etcdctl('role', 'grant-permission', readOnly.role, '--prefix=true', 'read', ETCD_SECURE.prefix);
  etcdctl('user', 'add', `${readOnly.name}:${readOnly.password}`);
  etcdctl('user', 'grant-role', readOnly.name, readOnly.role);
  etcdctl('auth', 'enable');
}

export const etcdSecureKind: ServerKind = {
  packageName: 'etcd-server',
  extraPackages: ['openssl'],
  startTimeoutMs: 30_000,
  prepare(record) {
    makeCertificates(join(record.dir, 'tls'));
  },
  async ready(record) {
    const body = await httpsGet(record.ports[0], '/health', join(record.dir, 'tls'), 1_000);
    return body !== null && /"health":\s*"true"/.test(body);
  },
  initialise: grantRoles,
};

import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:tls';
import { join } from 'node:path';
import { redisAclRules } from '../../libs/distributed-lock/src/strategies/redis/redis-acl';
import type { ServerKind } from './server-kinds';
import { instancesRoot, type ServerRecord } from './service-state';
import { makeTlsFiles, tlsFilesIn } from './tls-certificates';

/**
 * A Redis as production runs it: TLS only (no plain TCP port), the default user off, and the library's
 * user limited by ACL to its key prefix, its channels and its commands (`redisAclRules`). An admin user
 * stands in for the operator: the tests make other users with it (a stranger, one short of a permission).
 */
export const REDIS_TLS = Object.freeze({
  member: 'redis-tls',
  port: 16450,
  /** The namespace the library's user is limited to (the strategy's default). */
  namespace: 'dlock:',
  users: Object.freeze({
    admin: { name: 'lock-admin', password: 'redis-admin-tls-pw' },
    app: { name: 'lock-app', password: 'redis-app-tls-pw' },
  }),
});

/** The ACL file: exactly the recipe of docs/security.md. */
export function redisTlsAclFile(): string {
  const { admin, app } = REDIS_TLS.users;
  return [
    'user default off',
    `user ${admin.name} on >${admin.password} ~* &* +@all`,
    `user ${app.name} on >${app.password} ${redisAclRules(REDIS_TLS.namespace)}`,
    '',
  ].join('\n');
}

/** Where a started redis-tls keeps its CA certificate (removed with the topology). */
export function redisTlsCaFile(): string {
  return tlsFilesIn(join(instancesRoot(), REDIS_TLS.member)).ca;
}

/** Debian's redis-server 7.0 with `--tls-port` and `--port 0`; clients need no certificate of their own. */
export function redisTlsArgs(record: { dir: string; ports: readonly number[] }): string[] {
  const tls = tlsFilesIn(record.dir);
  return [
    '--port', '0',
    '--tls-port', String(record.ports[0]),
    '--bind', '127.0.0.1',
    '--tls-cert-file', tls.cert,
    '--tls-key-file', tls.key,
    '--tls-ca-cert-file', tls.ca,
    '--tls-auth-clients', 'no',
    '--aclfile', join(record.dir, 'users.acl'),
    '--save', '',
    '--appendonly', 'no',
    '--dir', record.dir,
    '--daemonize', 'no',
    '--logfile', '',
  ];
}

/** One unauthenticated PING over TLS: any Redis answer (NOAUTH, since the default user is off) means it serves. */
function tlsPing(port: number, ca: Buffer, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, ca });
    let data = '';
    const finish = (value: string | null): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    socket.once('secureConnect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      data += chunk.toString('latin1');
      if (data.includes('\r\n')) finish(data);
    });
    socket.on('error', () => finish(null));
  });
}

export const redisTlsKind: ServerKind = {
  packageName: 'redis-server',
  extraPackages: ['openssl'],
  startTimeoutMs: 10_000,
  prepare(record: ServerRecord) {
    makeTlsFiles(record.dir);
    writeFileSync(join(record.dir, 'users.acl'), redisTlsAclFile(), { mode: 0o600 });
  },
  async ready(record) {
    const answer = await tlsPing(record.ports[0], readFileSync(tlsFilesIn(record.dir).ca), 1_000);
    return answer !== null && /^(-NOAUTH|\+PONG)/.test(answer);
  },
};

import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fenceTableDdl, leaseTableDdl, LOCK_TABLES, rowTableDdl } from '../../libs/distributed-lock/src/strategies/database/lock-table.sql';
import { LOCK_QUEUE_TABLE, lockQueueDdl } from '../../libs/distributed-lock/src/strategies/database/lock-queue.sql';
import { SEMAPHORE_TABLES } from '../../libs/distributed-lock/src/strategies/database/row-semaphore.sql';
import { sqlDialectFor } from '../../libs/distributed-lock/src/strategies/database/sql-dialect';
import { mariadbArgs, mariadbKind, type ServerKind } from './server-kinds';
import { instancesRoot, type ServerRecord } from './service-state';
import { makeTlsFiles, tlsFilesIn } from './tls-certificates';

/**
 * A MariaDB as production runs it: every TCP connection must use TLS (`require_secure_transport`), the
 * lock tables are made by an administrator from the library's DDL helpers, and the library's user holds
 * only the grants of docs/security.md on them: no CREATE, no other table.
 */
export const MARIADB_TLS = Object.freeze({
  member: 'mariadb-tls',
  port: 13316,
  database: 'locktest',
  users: Object.freeze({
    root: { name: 'root', password: 'mariadb-root-tls-pw' },
    app: { name: 'lock_app', password: 'mariadb-app-tls-pw' },
  }),
});

/**
 * The grants of the library's user, for the default tables in `database`: the row strategy's lease table
 * and its queue of waiters (a waiter's row is deleted when it leaves), and the pessimistic strategy's row
 * and fence tables. `user` as 'name'@'host'. UPDATE on the row table is for MySQL 8, whose SELECT … FOR
 * UPDATE wants it (MariaDB asks only SELECT).
 */
export function lockTableGrants(database: string, user: string): string[] {
  return [
    `GRANT SELECT, INSERT, UPDATE ON \`${database}\`.\`${LOCK_TABLES.leases}\` TO ${user}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON \`${database}\`.\`${LOCK_QUEUE_TABLE}\` TO ${user}`,
    `GRANT SELECT, INSERT, UPDATE ON \`${database}\`.\`${LOCK_TABLES.rows}\` TO ${user}`,
    `GRANT SELECT, INSERT, UPDATE ON \`${database}\`.\`${LOCK_TABLES.fences}\` TO ${user}`,
  ];
}

/**
 * The grants a user of the lock table's semaphores adds to `lockTableGrants` (docs/security.md): the
 * semaphores table and the permits table, whose rows are deleted when a permit is given back. `user` as
 * 'name'@'host'; `tables` for other names than the defaults.
 */
export function semaphoreTableGrants(database: string, user: string, tables: { semaphores: string; permits: string } = SEMAPHORE_TABLES): string[] {
  return [
    `GRANT SELECT, INSERT, UPDATE ON \`${database}\`.\`${tables.semaphores}\` TO ${user}`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON \`${database}\`.\`${tables.permits}\` TO ${user}`,
  ];
}

/** Where a started mariadb-tls keeps its CA certificate (removed with the topology). */
export function mariadbTlsCaFile(): string {
  return tlsFilesIn(join(instancesRoot(), MARIADB_TLS.member)).ca;
}

export function mariadbTlsArgs(record: { dir: string; ports: readonly number[] }): string[] {
  const tls = tlsFilesIn(record.dir);
  return [...mariadbArgs(record.ports[0], record.dir), `--ssl-ca=${tls.ca}`, `--ssl-cert=${tls.cert}`, `--ssl-key=${tls.key}`, '--require-secure-transport=ON'];
}

/** Runs SQL as root over the Unix socket, which require_secure_transport counts as secure. */
function asRoot(record: ServerRecord, sql: string, password?: string): ReturnType<typeof spawnSync> {
  const args = ['--no-defaults', `--socket=${join(record.dir, 'mysqld.sock')}`, '-uroot', ...(password ? [`-p${password}`] : []), '-e', sql];
  return spawnSync('mariadb', args, { encoding: 'utf8' });
}

export const mariadbTlsKind: ServerKind = {
  packageName: 'mariadb-server',
  extraPackages: ['openssl'],
  startTimeoutMs: mariadbKind.startTimeoutMs,
  async prepare(record, members) {
    await mariadbKind.prepare?.(record, members);
    makeTlsFiles(record.dir);
  },
  ready: (record) => mariadbKind.ready(record),
  initialise(record) {
    const { root, app } = MARIADB_TLS.users;
    const db = MARIADB_TLS.database;
    const dialect = sqlDialectFor('mariadb');
    const user = `'${app.name}'@'127.0.0.1'`;
    const sql = [
      `ALTER USER 'root'@'localhost' IDENTIFIED BY '${root.password}'`,
      `ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '${root.password}'`,
      `CREATE DATABASE IF NOT EXISTS \`${db}\``,
      `USE \`${db}\``,
      // The administrator's migration: the tables from the library's DDL helpers.
      leaseTableDdl(dialect),
      ...lockQueueDdl(dialect),
      rowTableDdl(dialect),
      fenceTableDdl(dialect),
      `CREATE USER IF NOT EXISTS ${user} IDENTIFIED BY '${app.password}' REQUIRE SSL`,
      ...lockTableGrants(db, user),
    ].join(';\n');
    let result = asRoot(record, sql);
    // A restarted instance already has the password.
    if (result.status !== 0) result = asRoot(record, sql.split(';\n').slice(2).join(';\n'), root.password);
    if (result.status !== 0) throw new Error(`MariaDB (TLS) set-up failed: ${String(result.stderr)}`);
  },
};

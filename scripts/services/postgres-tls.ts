import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADVISORY_OBJECTS, advisoryHoldersDdl, advisoryTokensDdl } from '../../libs/distributed-lock/src/strategies/database/advisory-lock.sql';
import { fenceTableDdl, leaseClockDdl, leaseTableDdl, LOCK_TABLES, rowTableDdl } from '../../libs/distributed-lock/src/strategies/database/lock-table.sql';
import { LOCK_QUEUE_TABLE, lockQueueDdl } from '../../libs/distributed-lock/src/strategies/database/lock-queue.sql';
import { SEMAPHORE_TABLES } from '../../libs/distributed-lock/src/strategies/database/row-semaphore.sql';
import { sqlDialectFor } from '../../libs/distributed-lock/src/strategies/database/sql-dialect';
import { POSTGRES_USER, postgresArgs, postgresBinary, postgresKind, postgresRunAs, type ServerKind } from './server-kinds';
import { instancesRoot, type ServerRecord } from './service-state';
import { makeTlsFiles, tlsFilesIn } from './tls-certificates';

/**
 * A PostgreSQL as production runs it: TCP only through TLS (`hostssl`, password checked with SCRAM), the
 * lock tables and the advisory strategy's sequence made by an administrator from the library's DDL helpers,
 * PUBLIC's default rights on the database and its schema revoked, and the library's role holding only the
 * grants of docs/security.md: no CREATE, no other object.
 */
export const POSTGRES_TLS = Object.freeze({
  member: 'postgres-tls',
  port: 15442,
  database: 'locktest',
  schema: 'public',
  users: Object.freeze({
    admin: { name: POSTGRES_USER, password: 'postgres-admin-tls-pw' },
    app: { name: 'lock_app', password: 'postgres-app-tls-pw' },
  }),
});

/**
 * The grants of the library's role on PostgreSQL, one object per statement, for the default objects: the
 * row strategy's lease table and its queue of waiters (a waiter's row is deleted when it leaves; its
 * identity column needs no grant of its own), the pessimistic strategy's row and fence tables (its `FOR UPDATE` needs UPDATE
 * besides SELECT), and the advisory strategy's token sequence (`nextval` needs USAGE) and holder table. CONNECT and USAGE on
 * the schema are what PUBLIC has by default; a hardened server revokes them from PUBLIC.
 */
export function postgresLockGrants(database: string, schema: string, role: string): string[] {
  return [
    `GRANT CONNECT ON DATABASE ${database} TO ${role};`,
    `GRANT USAGE ON SCHEMA ${schema} TO ${role};`,
    `GRANT SELECT, INSERT, UPDATE ON ${LOCK_TABLES.leases} TO ${role};`,
    `GRANT SELECT, INSERT, UPDATE, DELETE ON ${LOCK_QUEUE_TABLE} TO ${role};`,
    `GRANT SELECT, INSERT, UPDATE ON ${LOCK_TABLES.rows} TO ${role};`,
    `GRANT SELECT, INSERT, UPDATE ON ${LOCK_TABLES.fences} TO ${role};`,
    `GRANT USAGE ON SEQUENCE ${ADVISORY_OBJECTS.sequence} TO ${role};`,
    `GRANT SELECT, INSERT, UPDATE ON ${ADVISORY_OBJECTS.holders} TO ${role};`,
  ];
}

/**
 * The two more grants of a role that takes the lock table's semaphores (acquirePermit), on tables made from
 * `semaphoreTablesDdl`: DELETE on the permits, since a permit given back is deleted.
 */
export function postgresSemaphoreGrants(role: string, tables: { semaphores: string; permits: string } = SEMAPHORE_TABLES): string[] {
  return [`GRANT SELECT, INSERT, UPDATE ON ${tables.semaphores} TO ${role};`, `GRANT SELECT, INSERT, UPDATE, DELETE ON ${tables.permits} TO ${role};`];
}

/** Where a started postgres-tls keeps its CA certificate (removed with the topology). */
export function postgresTlsCaFile(): string {
  return tlsFilesIn(join(instancesRoot(), POSTGRES_TLS.member)).ca;
}

export function postgresTlsArgs(record: { dir: string; ports: readonly number[] }): string[] {
  const tls = tlsFilesIn(record.dir);
  return [...postgresArgs(record.ports[0], record.dir, false), '-c', 'ssl=on', '-c', `ssl_cert_file=${tls.cert}`, '-c', `ssl_key_file=${tls.key}`, '-c', 'password_encryption=scram-sha-256'];
}

/**
 * TCP only with TLS and a password; the administrator also over the instance's Unix socket (no TCP, so the
 * set-up runs before any password exists). No `host` line: a connection without TLS matches nothing.
 */
const PG_HBA = ['# TYPE  DATABASE  USER  ADDRESS  METHOD', `local   all  ${POSTGRES_USER}  trust`, 'hostssl all  all   127.0.0.1/32  scram-sha-256', ''].join('\n');

/** Runs SQL as the administrator over the Unix socket, each statement on its own (CREATE DATABASE may not share a transaction). */
function asAdmin(record: ServerRecord, database: string, statements: readonly string[]): ReturnType<typeof spawnSync> {
  const args = ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-h', record.dir, '-p', String(record.ports[0]), '-U', POSTGRES_USER, '-d', database, ...statements.flatMap((sql) => ['-c', sql])];
  return spawnSync(postgresBinary('psql'), args, { encoding: 'utf8', timeout: 30_000 });
}

export const postgresTlsKind: ServerKind = {
  packageName: 'postgresql',
  extraPackages: ['openssl'],
  startTimeoutMs: postgresKind.startTimeoutMs,
  stopSignal: postgresKind.stopSignal,
  runAs: postgresRunAs,
  async prepare(record, members) {
    await postgresKind.prepare?.(record, members);
    writeFileSync(join(record.dir, 'data', 'pg_hba.conf'), PG_HBA);
    const tls = makeTlsFiles(record.dir);
    // PostgreSQL refuses a key that others may read, or that belongs to another user than itself or root.
    chmodSync(tls.key, 0o600);
    const runAs = postgresRunAs();
    if (runAs) {
      const dir = join(record.dir, 'tls');
      for (const path of [dir, ...readdirSync(dir).map((file) => join(dir, file)), join(record.dir, 'data', 'pg_hba.conf')]) chownSync(path, runAs.uid, runAs.gid);
    }
  },
  ready(record) {
    // Over the Unix socket: a TCP probe without TLS is refused by pg_hba.conf, whether or not the server is up.
    const answer = spawnSync(postgresBinary('pg_isready'), ['-q', '-h', record.dir, '-p', String(record.ports[0]), '-U', POSTGRES_USER, '-d', 'postgres'], { timeout: 5_000 });
    return Promise.resolve(answer.status === 0);
  },
  initialise(record) {
    const { admin, app } = POSTGRES_TLS.users;
    const db = POSTGRES_TLS.database;
    const dialect = sqlDialectFor('postgres');
    const created = asAdmin(record, 'postgres', [`ALTER ROLE ${admin.name} PASSWORD '${admin.password}'`, `CREATE DATABASE ${db}`, `CREATE ROLE ${app.name} LOGIN PASSWORD '${app.password}'`]);
    if (created.status !== 0) throw new Error(`PostgreSQL (TLS) set-up failed: ${String(created.stderr)}`);
    const granted = asAdmin(record, db, [
      // A hardened server: nobody connects to the database or uses its schema unless granted.
      `REVOKE ALL ON DATABASE ${db} FROM PUBLIC`,
      `REVOKE ALL ON SCHEMA ${POSTGRES_TLS.schema} FROM PUBLIC`,
      // The administrator's migration: the objects from the library's DDL helpers.
      leaseTableDdl(dialect),
      ...leaseClockDdl(dialect),
      ...lockQueueDdl(dialect),
      rowTableDdl(dialect),
      fenceTableDdl(dialect),
      ...advisoryTokensDdl(dialect),
      ...advisoryHoldersDdl(dialect),
      ...postgresLockGrants(db, POSTGRES_TLS.schema, app.name),
    ]);
    if (granted.status !== 0) throw new Error(`PostgreSQL (TLS) set-up failed: ${String(granted.stderr)}`);
  },
};

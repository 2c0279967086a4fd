import { readFileSync } from 'node:fs';
import type { RedisOptions } from 'ioredis';
import type { MysqlDataSourceOptions } from 'typeorm/driver/mysql/MysqlDataSourceOptions';
import type { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions';
import { ensureDebianPackages, MARIADB_TLS, mariadbTlsCaFile, packagesFor, POSTGRES_TLS, postgresTlsCaFile, REDIS_TLS, redisTlsCaFile } from '../../scripts/services';

/** Installs what the TLS topologies need (openssl included) on a fresh machine; a no-op once there. */
export function ensureSecurePackages(): void {
  ensureDebianPackages(packagesFor(['redis-tls', 'mariadb-tls', 'postgres-tls']), (line) => process.stdout.write(`${line}\n`));
}

/** ioredis options for the redis-tls topology as `username`: TLS verified against its throwaway CA. */
export function redisTlsOptions(username: string, password: string): RedisOptions {
  return { host: '127.0.0.1', port: REDIS_TLS.port, username, password, tls: { ca: readFileSync(redisTlsCaFile()) } };
}

/** TypeORM options for the mariadb-tls topology as `username`: TLS verified against its throwaway CA. */
export function mariadbTlsOptions(username: string, password: string): MysqlDataSourceOptions {
  return {
    type: 'mysql',
    host: '127.0.0.1',
    port: MARIADB_TLS.port,
    username,
    password,
    database: MARIADB_TLS.database,
    ssl: { ca: readFileSync(mariadbTlsCaFile()), rejectUnauthorized: true },
    poolSize: 8,
    connectTimeout: 5_000,
  };
}

/** TypeORM options for the postgres-tls topology as `username`: TLS verified against its throwaway CA. */
export function postgresTlsOptions(username: string, password: string): PostgresDataSourceOptions {
  return {
    type: 'postgres',
    host: '127.0.0.1',
    port: POSTGRES_TLS.port,
    username,
    password,
    database: POSTGRES_TLS.database,
    ssl: { ca: readFileSync(postgresTlsCaFile()), rejectUnauthorized: true },
    poolSize: 8,
    connectTimeoutMS: 5_000,
  };
}

import type { DataSourceOptions } from 'typeorm';
import { loadPeerDependency } from '../load-peer-dependency';

/** The driver package TypeORM loads for each database type the strategies run on (the optional peers). */
const DRIVERS: Partial<Record<DataSourceOptions['type'], readonly string[]>> = {
  postgres: ['pg'],
  // TypeORM 0.3 takes the older `mysql` package too, when `mysql2` is not there.
  mysql: ['mysql2', 'mysql'],
  mariadb: ['mysql2', 'mysql'],
  'better-sqlite3': ['better-sqlite3'],
};

/**
 * Loads the database driver of `type` before TypeORM is asked to, so that a missing one is a
 * `MissingPeerDependencyError` naming the package, at the strategy's construction, and not TypeORM's
 * `DriverPackageNotInstalledError` from the data source the strategy makes. Types the strategies do not
 * know are left to TypeORM.
 */
export function assertDatabaseDriver(type: DataSourceOptions['type'], strategy: string): void {
  const [driver, ...alternatives] = DRIVERS[type] ?? [];
  if (driver === undefined) return;
  try {
    loadPeerDependency(driver, strategy);
  } catch (error) {
    for (const alternative of alternatives) {
      try {
        loadPeerDependency(alternative, strategy);
        return;
      } catch {
        // not this one either
      }
    }
    throw error;
  }
}

/** A data source of TypeORM's mysql driver (mysql2): the only one whose pool and connections the fast paths use. */
export function isMysql(options: { type?: unknown } | undefined): boolean {
  return options?.type === 'mysql' || options?.type === 'mariadb';
}

/** A data source of TypeORM's postgres driver (pg). */
export function isPostgres(options: { type?: unknown } | undefined): boolean {
  return options?.type === 'postgres';
}

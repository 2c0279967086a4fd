import { DataSource, type DataSourceOptions } from 'typeorm';

/**
 * Whether `error` is a CREATE that lost a race to another session creating the same table: MariaDB's
 * ER_TABLE_EXISTS_ERROR (1050), PostgreSQL's 42P07 (the table) or 42710 (its row type, its sequence), or
 * 23505 on the catalog's unique index.
 */
function createdMeanwhile(error: unknown): boolean {
  const { errno, code } = (error ?? {}) as { errno?: unknown; code?: unknown };
  return errno === 1050 || code === 'ER_TABLE_EXISTS_ERROR' || code === '42P07' || code === '42710' || code === '23505';
}

/**
 * Initialises a data source of the tests. Several files synchronize the same fixture entities, in parallel,
 * on the same server: on a fresh one (every CI run) two of them can both find a table missing, and one
 * CREATE then fails with "already exists". The table is there then, as the entity says: TypeORM has
 * destroyed the failed data source, and a new one synchronizes against the table.
 */
export async function initializeDataSource(options: DataSourceOptions): Promise<DataSource> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await new DataSource(options).initialize();
    } catch (error) {
      if (attempt >= 5 || !createdMeanwhile(error)) throw error;
    }
  }
}

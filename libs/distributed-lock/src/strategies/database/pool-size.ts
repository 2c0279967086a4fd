import type { DataSourceOptions } from 'typeorm';

/**
 * How many connections the pool of a data source with these options holds at most, read as TypeORM's
 * drivers build the pool from them:
 * - MySQL/MariaDB (mysql2): `connectionLimit`, which TypeORM sets from `poolSize` (the replication
 *   master's first) and `extra` overrides; 10 when it is not a number, no limit when 0;
 * - PostgreSQL (pg-pool): `max`, set from `poolSize` and overridden by `extra`; then `extra.poolSize`;
 *   10 when none is set (0 counts as unset).
 *
 * Undefined where the pool is not known (another driver). Read from the options, so that a mistake is
 * found when the strategy is made, before the data source is initialised.
 */
export function poolSizeOf(options: DataSourceOptions): number | undefined {
  const extra = (options as { extra?: unknown }).extra;
  const given = typeof extra === 'object' && extra !== null ? (extra as Record<string, unknown>) : {};
  if (options.type === 'mysql' || options.type === 'mariadb') {
    const limit = 'connectionLimit' in given ? given.connectionLimit : (options.replication?.master.poolSize ?? options.poolSize);
    const size = Number(limit);
    if (Number.isNaN(size)) return 10;
    return size === 0 ? Number.POSITIVE_INFINITY : size;
  }
  if (options.type === 'postgres') {
    const max = 'max' in given ? given.max : options.poolSize;
    return Number(max) || Number(given.poolSize) || 10;
  }
  return undefined;
}

import type { EntityManager, ObjectLiteral } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import type { EntityMetadata } from 'typeorm/metadata/EntityMetadata';
import { queryDirect, typeOrmObserves, typeOrmQueryError } from './mysql-direct';
import { mysqlConnectionOf, mysqlPoolOf, type MysqlQueryable } from './typeorm-internals';

/** The version-checked UPDATE of one entity for one shape of change (which columns it sets), built once. */
interface VersionedUpdatePlan {
  readonly sql: string;
  /** The set properties, in the order of their placeholders. */
  readonly properties: readonly string[];
  readonly columns: readonly ColumnMetadata[];
}

/** Per entity and per shape of change; null remembers a shape the direct path does not take. */
const plans = new WeakMap<EntityMetadata, Map<string, VersionedUpdatePlan | null>>();

/**
 * Runs `UPDATE … SET …, version = version + 1 WHERE id = ? AND version = ?` straight on the mysql2
 * pool (or on the transaction's connection, both found through typeorm-internals.ts) and resolves the
 * number of rows changed, or returns undefined when this change must go through TypeORM's query builder
 * instead. It rebuilds the statement TypeORM's query builder writes: `optimisticUpdate`'s `fastPaths:
 * false` turns it off.
 *
 * Why: on MySQL/MariaDB the query builder and the query runner add CPU to every update, a large share of
 * a whole read-modify-write. The statement is what the query builder would write (values prepared by the
 * driver, so transformers, JSON and dates behave the same; the `@VersionColumn` and `@UpdateDateColumn`
 * bumped the same way), built once per entity and shape.
 *
 * Taken only where nothing of TypeORM's is skipped: no subscribers (they hear query-builder updates), no
 * query logging, a numeric version, a single-column primary key given as a plain value, and plain
 * columns in `set` (no relations, embedded objects, spatial types or SQL-expression functions).
 */
export function runVersionedUpdateDirect(
  manager: EntityManager,
  metadata: EntityMetadata,
  checkColumn: ColumnMetadata,
  id: unknown,
  expectedVersion: number | Date,
  set: ObjectLiteral,
): Promise<number | undefined> | undefined {
  if (typeof expectedVersion !== 'number' || (typeof id !== 'string' && typeof id !== 'number')) return undefined;
  const dataSource = manager.connection;
  if (typeOrmObserves(dataSource)) return undefined;
  const target = targetOf(manager);
  if (!target) return undefined;
  const properties: string[] = [];
  for (const property in set) {
    const value: unknown = set[property];
    if (value === undefined) continue; // TypeORM skips undefined values too
    if (typeof value === 'function') return undefined; // a SQL expression: the query builder writes it
    properties.push(property);
  }
  const plan = planOf(metadata, checkColumn, properties);
  if (!plan) return undefined;
  const driver = dataSource.driver;
  const values: unknown[] = plan.columns.map((column, i) => driver.preparePersistentValue(set[plan.properties[i]], column));
  values.push(id, expectedVersion);
  return queryDirect(target, plan.sql, values).then(
    (result) => result.affected,
    (error: unknown) => {
      // The error the query builder would have thrown.
      throw typeOrmQueryError(plan.sql, values, error, 'optimisticUpdate');
    },
  );
}

/** The transaction's own connection when the manager belongs to one, else the data source's pool. */
function targetOf(manager: EntityManager): MysqlQueryable | undefined {
  if (manager.queryRunner) return manager.queryRunner.isReleased ? undefined : mysqlConnectionOf(manager.queryRunner);
  return mysqlPoolOf(manager.connection);
}

function planOf(metadata: EntityMetadata, checkColumn: ColumnMetadata, properties: readonly string[]): VersionedUpdatePlan | null {
  let byShape = plans.get(metadata);
  if (!byShape) plans.set(metadata, (byShape = new Map()));
  const shape = `${checkColumn.propertyPath}\u0000${properties.join('\u0000')}`;
  let plan = byShape.get(shape);
  if (plan === undefined) byShape.set(shape, (plan = buildPlan(metadata, checkColumn, properties)));
  return plan;
}

function buildPlan(metadata: EntityMetadata, checkColumn: ColumnMetadata, properties: readonly string[]): VersionedUpdatePlan | null {
  const primary = metadata.primaryColumns;
  if (properties.length === 0 || primary.length !== 1 || !isPlainKey(metadata, primary[0]) || !isPlainKey(metadata, checkColumn)) return null;
  if (checkColumn === metadata.updateDateColumn) return null; // a timestamp version is compared as a Date
  const columns: ColumnMetadata[] = [];
  for (const property of properties) {
    const found = metadata.findColumnsWithPropertyPath(property);
    const column = found.length === 1 ? found[0] : undefined;
    if (!column || column.propertyPath !== property || !column.isUpdate || !isPlain(metadata, column) || column === checkColumn) return null;
    if (column === metadata.versionColumn || column === metadata.updateDateColumn) return null;
    columns.push(column);
  }
  const escape = (name: string): string => metadata.connection.driver.escape(name);
  const assignments = columns.map((column) => `${escape(column.databaseName)} = ?`);
  // What the query builder adds by itself, and the bump of a version property that is neither.
  for (const bumped of new Set([metadata.versionColumn, checkColumn])) {
    if (bumped) assignments.push(`${escape(bumped.databaseName)} = ${escape(bumped.databaseName)} + 1`);
  }
  if (metadata.updateDateColumn) assignments.push(`${escape(metadata.updateDateColumn.databaseName)} = CURRENT_TIMESTAMP`);
  const table = metadata.tablePath
    .split('.')
    .map((part) => escape(part))
    .join('.');
  return {
    sql: `UPDATE ${table} SET ${assignments.join(', ')} WHERE ${escape(primary[0].databaseName)} = ? AND ${escape(checkColumn.databaseName)} = ?`,
    properties,
    columns,
  };
}

/** A column of the entity's own table whose value goes to the server as it is prepared by the driver. */
function isPlain(metadata: EntityMetadata, column: ColumnMetadata): boolean {
  const spatial = (metadata.connection.driver.spatialTypes as readonly unknown[]).includes(column.type);
  return !column.relationMetadata && !column.referencedColumn && !column.embeddedMetadata && !spatial && !column.isVirtual && !column.isVirtualProperty;
}

/** A plain column compared in the WHERE clause with the caller's value as given: no transformer to apply. */
function isPlainKey(metadata: EntityMetadata, column: ColumnMetadata): boolean {
  return isPlain(metadata, column) && !column.transformer;
}

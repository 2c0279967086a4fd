import type { EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import type { EntityMetadata } from 'typeorm/metadata/EntityMetadata';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { describe } from '../../locking/lock-options';

/** What `optimisticUpdate` and `fencedUpdate` share: one row of one entity, changed through a manager. */
interface RowUpdateInput {
  readonly manager: EntityManager;
  readonly id: unknown;
  readonly set: unknown;
}

/** The shared inputs, checked before anything reaches the database; `helper` names the function in the error. */
export function assertRowUpdateInput(options: RowUpdateInput, helper: string): void {
  const raw: unknown = options;
  if (typeof raw !== 'object' || raw === null) throw new InvalidLockOptionsError(helper, `expected an options object, got ${describe(raw)}.`);
  if (typeof options.manager?.createQueryBuilder !== 'function') {
    throw new InvalidLockOptionsError('manager', "expected a TypeORM EntityManager, e.g. dataSource.manager or a transaction's manager.");
  }
  if (options.id === undefined || options.id === null) throw new InvalidLockOptionsError('id', 'expected the primary key of the row to update.');
  if (typeof options.set !== 'object' || options.set === null || Array.isArray(options.set)) {
    throw new InvalidLockOptionsError('set', `expected an object of the columns to change, got ${describe(options.set)}.`);
  }
}

/**
 * The `where` of exactly one row from the id a caller gave: a plain value for a single-column key, or an
 * object with every column of the key (other properties are dropped). Anything else is refused before a
 * statement: TypeORM's `whereInIds` takes an array as several rows, and an object that misses a column of
 * the key as a filter on the rest (every row for `{}`), so a write meant for one row would change many.
 */
export function rowIdWhere(metadata: EntityMetadata, id: unknown): ObjectLiteral {
  const keys = metadata.primaryColumns.map((column) => column.propertyPath);
  const expected = keys.length === 1 ? `its ${keys[0]}, or { ${keys[0]} }` : `an object with ${keys.join(', ')}`;
  if (Array.isArray(id)) throw new InvalidLockOptionsError('id', `expected the key of one row of ${metadata.name} (${expected}), got an array: write one row per call.`);
  const given = typeof id === 'object' && id !== null ? (id as ObjectLiteral) : keys.length === 1 ? { [metadata.primaryColumns[0].propertyName]: id } : undefined;
  const whole = given !== undefined && metadata.primaryColumns.every((column) => column.getEntityValue(given) != null);
  const where = whole ? metadata.getEntityIdMap(given) : undefined;
  if (!where) throw new InvalidLockOptionsError('id', `expected the key of one row of ${metadata.name} (${expected}), got ${describe(id)}.`);
  return where;
}

/**
 * The row as it is now, after an UPDATE that changed nothing. In a transaction on MySQL/MariaDB (REPEATABLE
 * READ by default) a plain SELECT answers from the snapshot of the transaction's first read: the row as
 * the caller read it, not the row that refused the write. A locking read answers with the row as the
 * UPDATE saw it (which already locked it). `FOR UPDATE` rather than a shared lock: TypeORM writes `FOR
 * SHARE` for any server "8.0 or newer", which MariaDB (10.x, 11.x) refuses as a syntax error. PostgreSQL's
 * default isolation reads each statement afresh, and SQLite has one writer.
 */
export async function currentRow(manager: EntityManager, entity: EntityTarget<ObjectLiteral>, where: ObjectLiteral): Promise<ObjectLiteral | null> {
  const type = manager.connection.options.type;
  const snapshot = manager.queryRunner?.isTransactionActive === true && (type === 'mysql' || type === 'mariadb' || type === 'aurora-mysql');
  return manager.findOne(entity, { where, ...(snapshot ? { lock: { mode: 'pessimistic_write' as const } } : {}) });
}

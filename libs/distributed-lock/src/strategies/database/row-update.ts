import type { EntityManager, ObjectLiteral } from 'typeorm';
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

/** The `where` of one row from the id a caller gave: a plain value for a single-column key, else an object. */
export function rowIdWhere(metadata: EntityMetadata, id: unknown): ObjectLiteral | undefined {
  const given = typeof id === 'object' && id !== null ? (id as ObjectLiteral) : { [metadata.primaryColumns[0].propertyName]: id };
  return metadata.getEntityIdMap(given);
}

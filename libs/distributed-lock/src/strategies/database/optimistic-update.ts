import type { EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import type { EntityMetadata } from 'typeorm/metadata/EntityMetadata';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { VersionConflictError } from '../../errors/version-conflict.error';
import { describe } from '../../locking/lock-options';
import { assertFastPaths } from '../fast-paths-option';
import { assertRowUpdateInput, currentRow, rowIdWhere } from './row-update';
import { runVersionedUpdateDirect } from './versioned-update.sql';

/** One optimistic update of one row. */
export interface OptimisticUpdateOptions<T extends ObjectLiteral> {
  /** The entity manager to write with (a repository's, or a transaction's). */
  readonly manager: EntityManager;
  readonly entity: EntityTarget<T>;
  /** The row's primary key (a value, or an object for composite keys). */
  readonly id: unknown;
  /** The version read before computing the change (a number, or a Date for a timestamp column). */
  readonly expectedVersion: number | Date;
  /** The columns to change. */
  readonly set: QueryDeepPartialEntity<T>;
  /**
   * The property that carries the version. Default: the entity's `@VersionColumn`, else its
   * `@UpdateDateColumn` (an `updated_at` timestamp as the version).
   */
  readonly versionProperty?: string;
  /**
   * On MySQL/MariaDB, send the UPDATE straight to the mysql2 pool (or the transaction's connection) under
   * TypeORM, as its query builder would write it (see `typeorm-internals.ts` and `versioned-update.sql.ts`).
   * `false`: always through TypeORM's query builder, its public API, slower; for a TypeORM version whose
   * internals this path no longer fits. Default true.
   */
  readonly fastPaths?: boolean;
}

/**
 * `UPDATE … SET …, version = version + 1 WHERE id = ? AND version = ?` and a `VersionConflictError`
 * when no row matched: someone else wrote since the row was read. TypeORM's own `save()` does not check
 * the version (typeorm#2848); this does, in the database, in one statement.
 *
 * Pair it with `@OptimisticVersion` (or `runWithOptimisticRetry`) to re-read and retry on conflict.
 */
export async function optimisticUpdate<T extends ObjectLiteral>(options: OptimisticUpdateOptions<T>): Promise<void> {
  assertUpdateInput(options);
  const metadata = options.manager.connection.getMetadata(options.entity);
  const column = options.versionProperty
    ? metadata.findColumnWithPropertyPath(options.versionProperty)
    : (metadata.versionColumn ?? metadata.updateDateColumn);
  if (!column) {
    throw new InvalidLockOptionsError(
      'versionProperty',
      `${metadata.name} has no @VersionColumn or @UpdateDateColumn${options.versionProperty ? ` and no property "${options.versionProperty}"` : ''}; add one or name the property.`,
    );
  }
  const where = rowIdWhere(metadata, options.id);
  const direct = options.fastPaths === false ? undefined : runVersionedUpdateDirect(options.manager, metadata, column, options.id, options.expectedVersion, options.set as ObjectLiteral);
  const affected = direct ? await direct : await updateThroughQueryBuilder(options, metadata, column, where);
  if (affected === 1) return;
  const current = await currentRow(options.manager, options.entity, where);
  throw new VersionConflictError(metadata.name, options.id, options.expectedVersion, current ? current[column.propertyName] : undefined);
}

/** Checked before anything reaches the database: each mistake named with what to give instead. */
function assertUpdateInput(options: OptimisticUpdateOptions<ObjectLiteral>): void {
  assertRowUpdateInput(options, 'optimisticUpdate');
  const version = options.expectedVersion;
  const validVersion = typeof version === 'number' ? Number.isFinite(version) : version instanceof Date && !Number.isNaN(version.getTime());
  if (!validVersion) throw new InvalidLockOptionsError('expectedVersion', `expected the version read with the row (a number, or a Date), got ${describe(version)}.`);
  assertFastPaths(options.fastPaths);
}

/** Any data source, any change: the query builder writes the statement. Resolves the rows changed. */
async function updateThroughQueryBuilder<T extends ObjectLiteral>(options: OptimisticUpdateOptions<T>, metadata: EntityMetadata, column: ColumnMetadata, where: ObjectLiteral): Promise<number | undefined> {
  const set: Record<string, unknown> = { ...(options.set as Record<string, unknown>) };
  // TypeORM's update builder bumps @VersionColumn (+1) and @UpdateDateColumn (now) by itself; any other
  // version property is bumped here.
  if (column !== metadata.versionColumn && column !== metadata.updateDateColumn) {
    set[column.propertyName] = typeof options.expectedVersion === 'number' ? () => `${column.databaseName} + 1` : new Date();
  }
  const result = await options.manager
    .createQueryBuilder()
    .update(options.entity)
    .set(set as QueryDeepPartialEntity<T>)
    .whereInIds(where)
    .andWhere(`${column.databaseName} = :expectedVersion`, { expectedVersion: options.expectedVersion })
    .execute();
  return result.affected;
}

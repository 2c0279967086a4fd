import type { EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { FencedWriteRefusedError } from '../../errors/fenced-write-refused.error';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { describe } from '../../locking/lock-options';
import { assertRowUpdateInput, currentRow, rowIdWhere } from './row-update';

/** One fenced update of one row. */
export interface FencedUpdateOptions<T extends ObjectLiteral> {
  /** The entity manager to write with (a repository's, or a transaction's). */
  readonly manager: EntityManager;
  readonly entity: EntityTarget<T>;
  /** The row's primary key (a value, or an object for composite keys). */
  readonly id: unknown;
  /** The writer's fencing token: `lock.fencingToken`, a permit's, or a leader's `term`. */
  readonly token: number;
  /**
   * The fence read with the row, in the same read the change was computed from. A string of digits is
   * taken too: TypeORM returns a PostgreSQL or MySQL `bigint` column as a string.
   */
  readonly seenFence: number | string;
  /** The property of the column that records the token of the last fenced write, e.g. `"lastFence"`. */
  readonly fenceProperty: string;
  /** The columns to change (without the fence: it is set to `token`). */
  readonly set: QueryDeepPartialEntity<T>;
}

/**
 * `UPDATE … SET …, fence = :token WHERE id = ? AND fence = :seenFence AND fence <= :token`, and a
 * `FencedWriteRefusedError` when no row matched.
 *
 * Why both conditions: `fence <= :token` refuses a holder whose lock was lost (paused past its lease, a
 * failover) once a newer holder wrote. It does not refuse the newer holder when it read the row before the
 * older holder's late write landed: its change, computed from that read, would undo the late write (the
 * same item sold twice). `fence = :seenFence` refuses that write too, as the row changed since its read.
 * An equal token is this holder's own earlier write (a leader writes many times in one term): with
 * `fence = :seenFence` it is safe to let it write again, once it has read that write back.
 */
export async function fencedUpdate<T extends ObjectLiteral>(options: FencedUpdateOptions<T>): Promise<void> {
  const seenFence = assertFencedInput(options);
  const metadata = options.manager.connection.getMetadata(options.entity);
  const column = metadata.findColumnWithPropertyPath(options.fenceProperty);
  if (!column) throw new InvalidLockOptionsError('fenceProperty', `${metadata.name} has no property "${options.fenceProperty}"; name the column that records the last fenced write's token.`);
  const where = rowIdWhere(metadata, options.id);
  const builder = options.manager.createQueryBuilder();
  const fence = builder.escape(column.databaseName);
  const result = await builder
    .update(options.entity)
    .set(withFence(options.set as ObjectLiteral, column.propertyPath.split('.'), options.token) as QueryDeepPartialEntity<T>)
    .whereInIds(where)
    .andWhere(`${fence} = :fencedUpdateSeen AND ${fence} <= :fencedUpdateToken`, { fencedUpdateSeen: seenFence, fencedUpdateToken: options.token })
    .execute();
  if (result.affected === 1) return;
  const row = await currentRow(options.manager, options.entity, where);
  const actual = row ? Number(column.getEntityValue(row)) : undefined;
  // A driver that does not count changed rows: the write went through if the row now carries the token
  // (or this holder had written it before: such a driver cannot tell the two apart).
  if (result.affected === undefined && actual === options.token) return;
  throw new FencedWriteRefusedError(metadata.name, options.id, options.token, seenFence, actual);
}

/** Checked before anything reaches the database: each mistake named with what to give instead. Returns the seen fence as a number. */
function assertFencedInput(options: FencedUpdateOptions<ObjectLiteral>): number {
  assertRowUpdateInput(options, 'fencedUpdate');
  if (!Number.isSafeInteger(options.token) || options.token <= 0) {
    throw new InvalidLockOptionsError('token', `expected the holder's fencing token, a positive integer (lock.fencingToken), got ${describe(options.token)}; a strategy without fencing gives null: it cannot fence writes.`);
  }
  const seen = typeof options.seenFence === 'string' && /^\d{1,16}$/.test(options.seenFence) ? Number(options.seenFence) : options.seenFence;
  if (typeof seen !== 'number' || !Number.isSafeInteger(seen) || seen < 0) {
    throw new InvalidLockOptionsError('seenFence', `expected the fence read with the row, a non-negative integer (or its digits as a string), got ${describe(options.seenFence)}.`);
  }
  if (typeof options.fenceProperty !== 'string' || options.fenceProperty === '') {
    throw new InvalidLockOptionsError('fenceProperty', `expected the name of the property that records the fence, e.g. "lastFence", got ${describe(options.fenceProperty)}.`);
  }
  return seen;
}

/**
 * `set` with the token at the fence's property path: `{ lastFence: token }`, or for a fence in an embedded
 * object (`stamp.fence`) `{ stamp: { ...set.stamp, fence: token } }`, keeping the embedded object's other
 * changes. A fence already in `set` is refused: the token goes there.
 */
function withFence(set: ObjectLiteral, path: readonly string[], token: number, at = path.join('.')): ObjectLiteral {
  const [head, ...rest] = path;
  const own = Object.prototype.hasOwnProperty.call(set, head);
  if (rest.length === 0) {
    if (own) throw new InvalidLockOptionsError('set', `leave "${at}" out of set: fencedUpdate writes the token there.`);
    return { ...set, [head]: token };
  }
  const given: unknown = own ? set[head] : undefined;
  const inner = typeof given === 'object' && given !== null ? (given as ObjectLiteral) : {};
  return { ...set, [head]: withFence(inner, rest, token, at) };
}

import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { describe } from '../locking/lock-options';

/** Validates the `fastPaths` option (database: typeorm-internals.ts, ZooKeeper: zookeeper-internals.ts); default true. */
export function assertFastPaths(value: unknown, path = 'fastPaths'): boolean {
  if (value === undefined) return true;
  if (typeof value !== 'boolean') throw new InvalidLockOptionsError(path, `expected true or false, got ${describe(value)}.`);
  return value;
}

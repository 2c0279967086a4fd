import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { describe } from '../locking/lock-options';

/** Validates the `fastPaths` option of the database strategies (typeorm-internals.ts); default true. */
export function assertFastPaths(value: unknown, path = 'fastPaths'): boolean {
  if (value === undefined) return true;
  if (typeof value !== 'boolean') throw new InvalidLockOptionsError(path, `expected true or false, got ${describe(value)}.`);
  return value;
}

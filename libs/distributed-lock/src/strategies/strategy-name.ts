import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { describe } from '../locking/lock-options';

/** A strategy's name option: a non-empty string, or the strategy's default. */
export function strategyName(name: unknown, fallback: string): string {
  if (name === undefined) return fallback;
  if (typeof name !== 'string' || name.length === 0) throw new InvalidLockOptionsError('name', `expected a non-empty string, got ${describe(name)}.`);
  return name;
}

import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { validateLockKey } from './lock-key';
import { assertKnownKeys } from './lock-options';

/** Options of `LockService.queryPrefix`. */
export interface PrefixQueryOptions {
  /** At most this many keys per page (1 to 1,000; default 100). */
  readonly limit?: number;
  /** The `next` of the previous page; none for the first. */
  readonly cursor?: string | null;
}

/** The most keys one page may ask for: each is one more read of the backend. */
const MAX_LIMIT = 1_000;
const DEFAULT_LIMIT = 100;

/** The prefix and options of a prefix query, checked before any server is asked. */
export function validatePrefixQuery(prefix: unknown, options: unknown): { prefix: string; limit: number; cursor?: string } {
  const checked = validateLockKey(prefix, 'Key prefix', true);
  if (options === undefined) return { prefix: checked, limit: DEFAULT_LIMIT };
  assertKnownKeys(options, ['limit', 'cursor'], 'queryPrefix options');
  const { limit = DEFAULT_LIMIT, cursor } = options as PrefixQueryOptions;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new InvalidLockOptionsError('limit', `expected a whole number of keys from 1 to ${MAX_LIMIT}, got ${String(limit)}.`);
  }
  if (cursor === undefined || cursor === null) return { prefix: checked, limit };
  // A cursor may be a key in the backend's encoding: a longest key of 3-byte characters, URI-encoded, is 4,609.
  if (typeof cursor !== 'string' || cursor.length === 0 || cursor.length > 16_384) {
    throw new InvalidLockOptionsError('cursor', 'expected the `next` string of the previous page (or null for the first page).');
  }
  return { prefix: checked, limit, cursor };
}

import { lockKeyHash } from '../locking/lock-key-hash';

/**
 * How the module's log lines show lock keys, which can carry user data: `'plain'` as they are, `'hashed'` as
 * `key#` and the first 16 hex digits of the key's SHA-256 (lines about one lock still match each other, and
 * the `lock.key.hash` of its spans).
 */
export type LogKeys = 'plain' | 'hashed';

export const LOG_KEYS: readonly LogKeys[] = ['plain', 'hashed'];

/** `text` with every occurrence of `key` shown the `mode` way (an error message in the line quotes it too). */
export function keysForLog(text: string, key: string | undefined, mode: LogKeys): string {
  if (mode === 'plain' || !key) return text;
  return text.split(key).join(`key#${lockKeyHash(key)}`);
}

/**
 * Writes the lock key an error of ours carries (its `key` field) the `mode` way in its message and stack, for
 * an error that others log as it is (`@nestjs/schedule` logs a job's error with its stack). The `key` field
 * keeps the key, for code that reads it. Any other value is returned untouched.
 */
export function hideKeyInError(error: unknown, mode: LogKeys): unknown {
  if (mode === 'plain' || !(error instanceof Error)) return error;
  const key = (error as { key?: unknown }).key;
  if (typeof key !== 'string' || !key) return error;
  error.message = keysForLog(error.message, key, mode);
  if (error.stack) error.stack = keysForLog(error.stack, key, mode);
  return error;
}

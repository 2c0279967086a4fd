import { createHash } from 'node:crypto';

/**
 * A key's stand-in where the key itself must not appear: the first 16 hex digits of its SHA-256. Spans
 * (`lock.key.hash`) and hashed log lines (`logKeys: 'hashed'`) use the same one, so they match each other.
 */
export function lockKeyHash(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

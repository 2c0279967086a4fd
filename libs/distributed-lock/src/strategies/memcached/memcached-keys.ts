import { InvalidLockKeyError } from '../../errors/invalid-lock-key.error';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { describe } from '../../locking/lock-options';

/** The longest key memcached stores, in bytes (its `KEY_MAX_LENGTH`), namespace included. */
export const MAX_MEMCACHED_KEY_BYTES = 250;

/** Bytes that stand for themselves in a memcached key: printable ASCII but the space, and `%` (the escape). */
const PLAIN_KEY = /^[\x21-\x24\x26-\x7e]*$/;

/**
 * A lock key as memcached can hold it: the text protocol ends a key at a space or a control character, so
 * every UTF-8 byte outside printable ASCII, the space and `%` itself become `%XX`. The mapping is one to one
 * (`%` is escaped too), so two keys never share a lock, and a key never reaches the server as a command.
 */
export function encodeMemcachedKey(key: string): string {
  if (PLAIN_KEY.test(key)) return key;
  let encoded = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    encoded += byte >= 0x21 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return encoded;
}

/** The memcached key that holds the lock `key` under `namespace` (a valid namespace, see `assertNamespace`). */
export function memcachedLockKey(namespace: string, key: string): string {
  return namespace + encodeMemcachedKey(key);
}

/** Refuses, with `InvalidLockKeyError`, a key that does not fit in memcached's 250 bytes once encoded. */
export function assertMemcachedKeyFits(namespace: string, key: string, strategy: string): void {
  const bytes = memcachedLockKey(namespace, key).length;
  if (bytes > MAX_MEMCACHED_KEY_BYTES) {
    throw new InvalidLockKeyError(
      key,
      `the ${strategy} strategy stores keys of at most ${MAX_MEMCACHED_KEY_BYTES} bytes with its namespace "${namespace}"; this one takes ${bytes} ` +
        '(a space, "%" or a non-ASCII character takes 3 bytes per byte of UTF-8): hash long identifiers',
    );
  }
}

/** Validates the `namespace` option: printable ASCII without spaces or `%`, at most 100 bytes. */
export function assertNamespace(value: unknown): string {
  if (typeof value !== 'string' || value.length > 100 || !PLAIN_KEY.test(value)) {
    throw new InvalidLockOptionsError('namespace', `expected at most 100 printable ASCII characters without spaces or "%", e.g. "dlock:", got ${describe(value)}.`);
  }
  return value;
}

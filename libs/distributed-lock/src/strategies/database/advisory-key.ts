import { createHash } from 'node:crypto';

/** Longest name MySQL's GET_LOCK takes (MySQL 5.7+ refuses longer ones; MariaDB accepts them). */
export const MAX_GET_LOCK_NAME = 64;

/** What a hashed GET_LOCK name starts with; a key that starts with it is hashed too, so no key's name is another's hash. */
const HASHED = 'dlock#';

/**
 * The PostgreSQL advisory lock key of a lock key: the first 8 bytes of the key's SHA-256 (UTF-8), as a
 * signed 64-bit integer, in decimal (passed as a `bigint` parameter).
 *
 * Two different keys share an advisory lock only if their hashes' first 64 bits are equal: about one
 * chance in 2^64 for a pair, about 3·10^-8 among a million keys used together. A collision never lets two
 * holders in: it makes the two keys one lock (each waits for the other), and a holder of one that takes
 * the other as well waits for itself until its wait times out.
 */
export function postgresAdvisoryKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest().readBigInt64BE(0).toString();
}

/**
 * The GET_LOCK name of a lock key. Names are server-wide (not per database) and limited to 64 characters,
 * and MySQL compares them ignoring case where MariaDB does not: a key is its own name only when it is at
 * most 64 characters of printable ASCII without capital letters (and does not start with "dlock#");
 * every other key is named "dlock#" + the first 58 hex digits of its SHA-256 (64 characters, 232 bits, so
 * two keys never share a name in practice).
 */
export function getLockName(key: string): string {
  if (key.length <= MAX_GET_LOCK_NAME && /^[\x20-\x40\x5b-\x7e]+$/.test(key) && !key.startsWith(HASHED)) return key;
  return `${HASHED}${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, MAX_GET_LOCK_NAME - HASHED.length)}`;
}

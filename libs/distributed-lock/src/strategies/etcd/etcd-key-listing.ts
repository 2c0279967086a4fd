import type { KeyListing } from '../../locking/lock-query';
import type { EtcdLockClient } from './etcd-client.type';
import { decodedKeyName } from '../key-pages';

/** Contender keys one page reads at most: a lock with a longer line is still listed once, from its first keys. */
const KEYS_PER_PAGE_FACTOR = 4;

/** The first key after every key that starts with `prefix` (etcd's range end for a prefix). */
function prefixEnd(prefix: string): Buffer {
  const bytes = Buffer.from(prefix);
  for (let i = bytes.length - 1; i >= 0; i -= 1) {
    if (bytes[i] < 0xff) {
      const end = Buffer.from(bytes.subarray(0, i + 1));
      end[i] += 1;
      return end;
    }
  }
  return Buffer.from([0]);
}

/**
 * The locks under `prefix` that have contender keys (held, or waited for), a page at a time, from one
 * keys-only range in key order: each lock is the URI-encoded name before the first "/" of its keys (see
 * etcdLockPrefix), the semaphores' folder left out. The next page starts after the last name listed
 * (`cursor`: that name with "0", the byte after "/", appended), so a lock whose line is longer than the
 * range read is still listed once. A page may hold fewer names than `limit`.
 */
export async function listEtcdLockKeys(client: EtcdLockClient, namespace: string, prefix: string, page: { readonly cursor?: string; readonly limit: number }): Promise<KeyListing> {
  const encodedPrefix = `${namespace}${encodeURIComponent(prefix)}`;
  const start = page.cursor === undefined ? encodedPrefix : `${namespace}${page.cursor}`;
  const read = page.limit * KEYS_PER_PAGE_FACTOR;
  const found = await client.getAll().inRange({ start, end: prefixEnd(encodedPrefix) }).sort('Key', 'Ascend').limit(read).keys();
  const names: string[] = [];
  let lastSeen: string | undefined;
  for (const key of found) {
    const slash = key.indexOf('/', namespace.length);
    if (slash < 0) continue;
    lastSeen = key.slice(namespace.length, slash);
    // The semaphores' folder ("sem/<semaphore>/<permit>"): not a lock.
    if (lastSeen !== 'sem' && names[names.length - 1] !== lastSeen) names.push(lastSeen);
  }
  const listed = names.slice(0, page.limit);
  const keys = listed.map(decodedKeyName).filter((key): key is string => key !== undefined && key.startsWith(prefix));
  // The lock named "sem" is written "%73em" (see etcdLockPrefix): outside the range of the prefixes "s",
  // "se" and "sem", asked apart on their first page (the empty prefix's range holds it).
  if (page.cursor === undefined && prefix !== '' && 'sem'.startsWith(prefix) && (await client.getAll().prefix(`${namespace}%73em/`).limit(1).keys()).length > 0) keys.unshift('sem');
  // The next page starts after the last name read: the last one listed when the page is full, else the
  // last one seen (a range may end inside a long line, or inside the semaphores' folder).
  if (names.length > page.limit) return { keys, next: `${listed[listed.length - 1]}0` };
  return found.length >= read && lastSeen !== undefined ? { keys, next: `${lastSeen}0` } : { keys };
}


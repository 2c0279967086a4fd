import type { KeyListing } from '../locking/lock-query';

/**
 * One page of keys from a backend that can list its keys in order (in memory, ZooKeeper's children): the
 * keys after `cursor` (the last key of the previous page), at most `limit`, in code-unit order. The cursor
 * of the next page is the last key of this one.
 */
export function pageOfSortedKeys(keys: Iterable<string>, page: { readonly cursor?: string; readonly limit: number }): KeyListing {
  const { cursor, limit } = page;
  const after = [...keys].filter((key) => cursor === undefined || key > cursor).sort();
  const listed = after.slice(0, limit);
  return after.length > limit ? { keys: listed, next: listed[listed.length - 1] } : { keys: listed };
}

/** The lock key a URI-encoded name stands for (etcd keys, ZooKeeper nodes); undefined for a name no lock wrote. */
export function decodedKeyName(name: string): string | undefined {
  try {
    return decodeURIComponent(name);
  } catch {
    return undefined;
  }
}

import type { MemcachedLockClient } from './memcached-client.type';
import { EXPIRED_AT_ONCE } from './memcached-expiry';

// The lock protocol, one memcached command per step. A lock is one item: its key is the lock's key, its
// value the owner id of the acquisition that holds it, its expiry the lease. Every change after the `add`
// is a compare-and-set against the CAS value read together with the owner, so it applies only if nothing
// touched the item in between: never a read followed by a blind write or delete.

/** How often an owner-checked change re-reads the item when it changed between the read and the write. */
const MAX_CAS_ROUNDS = 8;

/** The reply word of a refused command (`NOT_STORED`, `EXISTS`, `NOT_FOUND`), which memcache-client rejects with. */
function refusal(error: unknown): string | undefined {
  const tokens = (error as { cmdTokens?: unknown } | null)?.cmdTokens;
  return Array.isArray(tokens) && typeof tokens[0] === 'string' ? tokens[0] : undefined;
}

/** `add`: stores `owner` under `key` for `expirySeconds` only if the key holds nothing. True when stored. */
export async function addOwner(client: MemcachedLockClient, key: string, owner: string, expirySeconds: number): Promise<boolean> {
  try {
    const reply = await client.add(key, owner, { lifetime: expirySeconds, ignoreNotStored: false });
    return reply[0] === 'STORED';
  } catch (error) {
    if (refusal(error) === 'NOT_STORED') return false;
    throw error;
  }
}

/**
 * `gets`: the item's value and CAS value, or undefined when the key holds nothing (free, expired, evicted).
 * Throws on a CAS value of 0 (never a real one): memcached started with `-C` keeps no CAS values and refuses
 * every `cas`, so no lock could be extended or released there; better said at once than after the retries.
 */
export async function readOwner(client: MemcachedLockClient, key: string): Promise<{ owner: unknown; cas: string | number } | undefined> {
  // memcache-client resolves undefined for a miss, although its types do not say so.
  const item: { value: unknown; casUniq: string | number } | undefined = await client.gets<unknown>(key);
  if (item === undefined) return undefined;
  if (String(item.casUniq) === '0') {
    throw new Error('memcached answered a CAS value of 0: it runs without CAS (-C), so locks can be taken but never extended or released; start it without -C');
  }
  return { owner: item.value, cas: item.casUniq };
}

/**
 * `cas`: stores `value` for `expirySeconds` if the item still has the CAS value `cas`. `stored`, `changed`
 * (someone wrote it since it was read) or `gone` (it expired or was deleted since).
 */
export async function compareAndSet(client: MemcachedLockClient, key: string, value: string, expirySeconds: number, cas: string | number): Promise<'stored' | 'changed' | 'gone'> {
  try {
    const reply = await client.cas(key, value, { casUniq: cas, lifetime: expirySeconds, ignoreNotStored: false });
    if (reply[0] !== 'STORED') throw new Error(`memcached answered ${String(reply[0])} to cas`);
    return 'stored';
  } catch (error) {
    const word = refusal(error);
    if (word === 'EXISTS') return 'changed';
    if (word === 'NOT_FOUND') return 'gone';
    throw error;
  }
}

/**
 * The owner-checked change every step after `add` makes: read the item with its CAS value; if `owner`
 * holds it, store `next` (an owner id; with `EXPIRED_AT_ONCE`, nothing: the item is deleted) for
 * `expirySeconds` under that CAS value. True when done; false when `owner` no longer holds the lock. An
 * item that changed between the read and the write (an extension of ours racing a release) is read again.
 */
export async function replaceIfOwner(client: MemcachedLockClient, key: string, owner: string, next: string, expirySeconds: number): Promise<boolean> {
  for (let round = 0; round < MAX_CAS_ROUNDS; round += 1) {
    const item = await readOwner(client, key);
    if (item === undefined || item.owner !== owner) return false;
    const outcome = await compareAndSet(client, key, next, expirySeconds, item.cas);
    if (outcome !== 'changed') return outcome === 'stored';
  }
  throw new Error(`the memcached item ${key} changed ${MAX_CAS_ROUNDS} times between a read and a compare-and-set; try again`);
}

/** Owner-checked delete: a compare-and-set to an item that is expired at once. */
export function deleteIfOwner(client: MemcachedLockClient, key: string, owner: string): Promise<boolean> {
  return replaceIfOwner(client, key, owner, owner, EXPIRED_AT_ONCE);
}

/**
 * Break-glass delete (`LockService.breakLock`): reads the holder with its CAS value and deletes the item
 * under that value, so that a holder that took the lock after the read is never the one deleted. An item
 * that changed in between is deleted only if the same owner still holds it (its extension came in between).
 * Resolves the owner id whose hold it ended; undefined when nobody held the key, or when the hold ended on
 * its own meanwhile.
 */
export async function deleteHolder(client: MemcachedLockClient, key: string): Promise<string | undefined> {
  const item = await readOwner(client, key);
  if (item === undefined) return undefined;
  const owner = ownerIdOf(item.owner);
  const outcome = await compareAndSet(client, key, owner, EXPIRED_AT_ONCE, item.cas);
  if (outcome === 'gone') return undefined;
  if (outcome === 'changed' && !(await deleteIfOwner(client, key, owner))) return undefined;
  return owner;
}

/** The owner id an item holds, as text (the strategy stores strings; anything else another program wrote). */
export function ownerIdOf(value: unknown): string {
  return typeof value === 'string' ? value : String(value);
}

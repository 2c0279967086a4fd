import type { LockMode } from '../../locking/lock-lease';
import type { EtcdLockClient } from './etcd-client.type';
import { isLeaseGoneError, isWriterKey } from './etcd-keys';

/** Our contender key: its name and create revision. */
export interface Contender {
  readonly key: string;
  readonly createRevision: bigint;
}

/**
 * A key ahead of ours, by name and create revision: a released lease is reused, so the same name can come
 * back as a new contender (behind us) after the one we wait for is gone.
 */
export interface Blocker {
  readonly key: string;
  readonly createRevision: string;
}

/** The answer of an etcd transaction. */
export type EtcdTxnResult = Awaited<ReturnType<ReturnType<EtcdLockClient['if']>['commit']>>;

/** Names a contender key at one create revision (a reused lease brings the same name back later). */
export function lineId(key: string, createRevision: string): string {
  return `${createRevision}@${key}`;
}

/**
 * One transaction that creates our contender `key` under the lock's `prefix` if it is absent, bound to
 * the lease, and reads who is ahead: for a writer the newest key of the prefix (read before our put, in
 * the same transaction), for a reader the oldest (read after it). `succeeded` is false when the key
 * already existed.
 */
export function putContenderKey(client: EtcdLockClient, prefix: string, key: string, owner: string, leaseId: string, mode: LockMode): Promise<EtcdTxnResult> {
  const put = client.put(key).value(owner).lease(leaseId);
  const ops =
    mode === 'exclusive'
      ? [client.getAll().prefix(prefix).sort('Create', 'Descend').limit(1), put]
      : [put, client.getAll().prefix(prefix).sort('Create', 'Ascend').limit(1)];
  return client.if(key, 'Create', '==', 0).then(...ops).commit();
}

/**
 * Who is ahead, as the creating transaction read it: for a writer the newest key before ours (undefined:
 * we hold the lock); a reader is free to go when the oldest contender is itself, otherwise the full check
 * (`keyAhead`) decides ('unknown').
 */
export function blockerAfterPut(txn: Pick<EtcdTxnResult, 'responses'>, ownKey: string, mode: LockMode): Blocker | undefined | 'unknown' {
  if (mode === 'exclusive') {
    const newest = txn.responses[0]?.response_range?.kvs?.[0];
    return newest === undefined ? undefined : { key: newest.key.toString(), createRevision: String(newest.create_revision) };
  }
  const oldest = txn.responses[1]?.response_range?.kvs?.[0]?.key?.toString();
  return oldest === ownKey ? undefined : 'unknown';
}

/**
 * The key we must wait for, or undefined when we hold the lock: for a writer, the key created just before
 * ours; for a reader, the last writer created before ours.
 */
export async function keyAhead(client: EtcdLockClient, prefix: string, own: Contender, mode: LockMode): Promise<Blocker | undefined> {
  return blockerAmong((await rangeAhead(client, prefix, own, mode).exec()).kvs, mode);
}

/**
 * `keyAhead`, and in the same read-only transaction whether our own key still exists ('gone' when not).
 * Only a key that still exists holds the lock (Jepsen found etcd 3.4.3's recipe skipped that check).
 */
export async function keyAheadIfStillOurs(client: EtcdLockClient, prefix: string, own: Contender, mode: LockMode): Promise<Blocker | undefined | 'gone'> {
  const txn = await client.if(own.key, 'Create', '==', String(own.createRevision)).then(rangeAhead(client, prefix, own, mode)).commit();
  if (!txn.succeeded) return 'gone';
  return blockerAmong(txn.responses[0]?.response_range?.kvs ?? [], mode);
}

function rangeAhead(client: EtcdLockClient, prefix: string, own: Contender, mode: LockMode) {
  const all = client.getAll().prefix(prefix).sort('Create', 'Descend').maxCreateRevision(String(own.createRevision - 1n));
  return mode === 'exclusive' ? all.limit(1) : all;
}

function blockerAmong(ahead: ReadonlyArray<{ key: Buffer; create_revision: string | number }>, mode: LockMode): Blocker | undefined {
  const blocker = mode === 'exclusive' ? ahead[0] : ahead.find((kv) => isWriterKey(kv.key.toString()));
  return blocker === undefined ? undefined : { key: blocker.key.toString(), createRevision: String(blocker.create_revision) };
}

/**
 * True while `key` exists with our create revision. A key found on another lease than `leaseId` (a move to a
 * longer lease whose answer was lost: the caller could not tell whether it happened) is put back on
 * `leaseId`, the lease its holder renews; otherwise it would go when the lease it sits on runs out. Not by
 * an extension that a later one has `overtaken` (its `leaseId` may be one the later one moved the key off),
 * and only from the lease it was seen on (a move that lands meanwhile wins).
 */
export async function isStillOursOnLease(client: EtcdLockClient, key: string, createRevision: string, leaseId: string, overtaken: () => boolean): Promise<boolean> {
  const own = (await client.get(key).exec()).kvs[0];
  if (!own || String(own.create_revision) !== createRevision) return false;
  if (String(own.lease) === leaseId) return true;
  if (overtaken()) throw extensionOvertaken(key);
  const putBack = client.if(key, 'Create', '==', createRevision).and(key, 'Lease', '==', String(own.lease)).then(client.put(key).value(own.value).lease(leaseId));
  if (!(await putBack.commit()).succeeded) throw new Error(`etcd key ${key} changed lease while it was being extended; the next extension looks again`);
  return true;
}

/** An extension of `key` that a later one overtook (it waited too long for etcd): it leaves the key to that one. */
export function extensionOvertaken(key: string): Error {
  return new Error(`a later extension of etcd key ${key} started while this one waited for etcd; this one changes nothing more`);
}

/**
 * Puts our key, if it still exists with our create revision, on lease `leaseId` (a put keeps the key's
 * create revision, so its fencing token stays the same). True when it was still ours. The call ends by
 * `deadline` (ms since epoch), answered or not.
 */
export async function moveKeyToLease(client: EtcdLockClient, key: string, createRevision: string, owner: string, leaseId: string, deadline: number): Promise<boolean> {
  const txn = await client.if(key, 'Create', '==', createRevision).then(client.put(key).value(owner).lease(leaseId)).options({ deadline }).commit();
  return txn.succeeded;
}

/**
 * Deletes our key if it still exists with our create revision, in one round trip; the contender behind
 * us, which watches it, wakes. True when it was still ours.
 */
export async function deleteIfStillOurs(client: EtcdLockClient, key: string, createRevision: string): Promise<boolean> {
  const txn = await client.if(key, 'Create', '==', createRevision).then(client.delete().key(key)).commit();
  return txn.succeeded;
}

/**
 * One keep-alive of `lease` for an extension of `key`: false when etcd says the lease is gone. Throws for an
 * extension that a later one has `overtaken` meanwhile: its lease may be gone because the later one moved
 * the key off it, which is no loss.
 */
export async function renewLease(lease: ReturnType<EtcdLockClient['lease']>, key: string, overtaken: () => boolean): Promise<boolean> {
  let renewed: boolean;
  try {
    renewed = Number((await lease.keepaliveOnce()).TTL) > 0;
  } catch (error) {
    if (!isLeaseGoneError(error)) throw error;
    renewed = false;
  }
  if (overtaken()) throw extensionOvertaken(key);
  return renewed;
}

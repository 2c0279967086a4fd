import type { IKeyValue } from 'etcd3';
import type { LockInspection } from '../../locking/lock-query';
import type { EtcdLockClient } from './etcd-client.type';
import { ownerOfValue } from './etcd-contender-value';
import { isWriterKey } from './etcd-keys';
import { holdersAhead } from '../read-write-line';

/**
 * The most contender keys a query reads, in etcd's order: the holders, then the waiters. A longer line is
 * cut there (never read whole), as Redis's queue is at its first 1,000 waiters.
 */
export const QUERY_CONTENDERS_LIMIT = 1_000;

/** A hold as an inspection saw it: what `query` reports of it, and the key and create revision a break compares on. */
export interface EtcdHoldSeen {
  readonly holder: LockInspection['holders'][number];
  readonly key: string;
  readonly createRevision: string;
}

/** What an inspection saw of a lock: its holds, and its waiters in the order etcd serves them. */
export interface EtcdLockSeen {
  readonly holds: readonly EtcdHoldSeen[];
  readonly waiters: NonNullable<LockInspection['waiters']>;
}

/**
 * Who holds the lock under `prefix` and who waits, from etcd's own state in one read: the line of contender
 * keys in create-revision order (at most QUERY_CONTENDERS_LIMIT). The owner is the key's value, the fencing
 * token its create revision, as the holder's handle has them. No times: etcd keeps no grant time, and a
 * lease's time to live is told in whole seconds, on a lease the instance reuses from lock to lock.
 */
export async function inspectEtcdLock(client: EtcdLockClient, prefix: string): Promise<EtcdLockSeen> {
  const range = await client.getAll().prefix(prefix).sort('Create', 'Ascend').limit(QUERY_CONTENDERS_LIMIT).exec();
  const line = range.kvs.map(contenderOf);
  const holding = holdersAhead(line.map((contender) => contender.holder.mode));
  return { holds: line.slice(0, holding), waiters: line.slice(holding).map(({ holder: { owner, mode } }) => ({ owner, mode })) };
}

function contenderOf(kv: IKeyValue): EtcdHoldSeen {
  const key = kv.key.toString();
  const createRevision = String(kv.create_revision);
  return { key, createRevision, holder: { owner: ownerOfValue(kv.value), mode: isWriterKey(key) ? 'exclusive' : 'shared', fencingToken: Number(createRevision) } };
}

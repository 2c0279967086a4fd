// The raw etcd floors: a put-if-absent transaction and a delete, and the etcd strategy's own transaction.
import { Etcd3 } from 'etcd3';
import { etcdContenderKey, etcdLockPrefix } from '@app/distributed-lock/strategies/etcd/etcd-keys';
import type { BenchLock } from '../bench-subject';
import { env } from '../bench-env';
import { yieldLoop } from './yield-loop';

/** The etcd floor: a transaction that puts the key if absent, and a delete; waiting is a bare retry. */
export function rawEtcdFloor(): () => Promise<BenchLock> {
  return async () => {
    const client = new Etcd3({ hosts: env('LOCK_TEST_ETCD').split(',') });
    return {
      async acquire(key, waitMs) {
        const deadline = Date.now() + waitMs;
        for (;;) {
          const txn = await client.if(key, 'Create', '==', 0).then(client.put(key).value('x')).commit();
          if (txn.succeeded) {
            return async () => {
              await client.delete().key(key).exec();
            };
          }
          if (Date.now() > deadline) throw new Error('timeout');
          await yieldLoop();
        }
      },
      close: async () => client.close(),
    };
  };
}

/**
 * The etcd strategy's own server operations for a free lock, raw: the put-if-absent transaction of a
 * contender key under the lock's prefix, bound to a lease (granted once, before the measured sections,
 * as the strategy's pooled leases are) and reading the newest key before it in the same transaction;
 * then the key's delete, conditional on its create revision as the strategy's release is. A key ahead:
 * delete and retry after yielding. Against `floor:etcd txn put +
 * delete` it shows what the lease and the read cost the server; ours against it, what the library adds.
 */
export function rawEtcdRecipeFloor(): () => Promise<BenchLock> {
  return async () => {
    const client = new Etcd3({ hosts: env('LOCK_TEST_ETCD').split(',') });
    // Long enough for any case of the run; revoked (with its keys) on close.
    const lease = client.lease(600, { autoKeepAlive: false });
    const leaseId = await lease.grant();
    return {
      async acquire(key, waitMs) {
        const prefix = etcdLockPrefix('bench-floor-recipe/', key);
        const own = etcdContenderKey(prefix, 'exclusive', leaseId);
        const deadline = Date.now() + waitMs;
        for (;;) {
          const newest = client.getAll().prefix(prefix).sort('Create', 'Descend').limit(1);
          const txn = await client.if(own, 'Create', '==', 0).then(newest, client.put(own).value('x').lease(leaseId)).commit();
          if (!txn.succeeded) throw new Error(`${own} already exists`);
          if ((txn.responses[0]?.response_range?.kvs ?? []).length === 0) {
            const createRevision = String(txn.header.revision);
            // The strategy's release: a delete conditional on the key still being ours (one round trip).
            return async () => {
              await client.if(own, 'Create', '==', createRevision).then(client.delete().key(own)).commit();
            };
          }
          await client.delete().key(own).exec();
          if (Date.now() > deadline) throw new Error('timeout');
          await yieldLoop();
        }
      },
      close: async () => {
        await lease.revoke().catch(() => undefined);
        client.close();
      },
    };
  };
}

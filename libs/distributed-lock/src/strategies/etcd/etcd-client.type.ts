import type { Etcd3 } from 'etcd3';

/** What the etcd strategy uses of an `Etcd3` client: KV ranges, transactions, leases and watches. */
export type EtcdLockClient = Pick<Etcd3, 'if' | 'put' | 'getAll' | 'get' | 'lease' | 'watch' | 'delete' | 'close'>;

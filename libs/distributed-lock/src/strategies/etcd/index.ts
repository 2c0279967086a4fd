export { EtcdLockStrategy, type EtcdLockStrategyOptions, type EtcdLeaseGrant } from './etcd-lock.strategy';
export { etcdLockGuard } from './etcd-guard';
export type { EtcdLockClient } from './etcd-client.type';

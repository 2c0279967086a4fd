export { ZooKeeperLockStrategy, type ZooKeeperLockStrategyOptions, type ZooKeeperLeaseGrant } from './zookeeper-lock.strategy';
export type { ZooKeeperConnectionOptions } from './zookeeper-session';

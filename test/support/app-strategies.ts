import type { LockStrategy } from '@app/distributed-lock';
import { subjectNamed } from '../contract/subjects';

/**
 * The strategies an app process of the cross-process tests registers, by registered name → contract
 * subject: every cross-process strategy once (the in-memory one cannot be shared between processes).
 */
export const APP_STRATEGIES = {
  redis: 'redis (fair)',
  redlock: 'redlock (5 masters)',
  row: 'row (MariaDB)',
  sqlite: 'row (SQLite)',
  pessimistic: 'pessimistic (MariaDB)',
  zookeeper: 'zookeeper (standalone)',
  etcd: 'etcd (single node)',
  'row-postgres': 'row (PostgreSQL)',
  'pessimistic-postgres': 'pessimistic (PostgreSQL)',
  'advisory-postgres': 'advisory (PostgreSQL)',
  'advisory-mysql': 'advisory GET_LOCK (MariaDB)',
  memcached: 'memcached',
} as const;

/** A fresh strategy for each name of `APP_STRATEGIES`, for `DistributedLockModule.forRoot({ strategies })`. */
export async function createAppStrategies(): Promise<Record<keyof typeof APP_STRATEGIES, LockStrategy>> {
  const entries = await Promise.all(Object.entries(APP_STRATEGIES).map(async ([name, subject]) => [name, await subjectNamed(subject).create()] as const));
  return Object.fromEntries(entries) as Record<keyof typeof APP_STRATEGIES, LockStrategy>;
}

export { RowLockStrategy, type RowLockStrategyOptions } from './row-lock.strategy';
export { PessimisticLockStrategy, type PessimisticLockStrategyOptions, type PessimisticLeaseGrant } from './pessimistic-lock.strategy';
export { lockTransaction } from './lock-transaction';
export { leaseTableDdl, leaseClockDdl, rowTableDdl, fenceTableDdl, LOCK_TABLES, MAX_SQL_KEY_LENGTH } from './lock-table.sql';
export { optimisticUpdate, type OptimisticUpdateOptions } from './optimistic-update';
export type { LockDataSource } from './database-client.type';
export { sqlDialectFor, type SqlDialect } from './sql-dialect';

export { InMemoryLockStrategy, type InMemoryLockStrategyOptions } from './in-memory-lock.strategy';

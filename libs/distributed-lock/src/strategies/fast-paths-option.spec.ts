import type { EntityManager } from 'typeorm';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { optimisticUpdate } from './database/optimistic-update';
import { PessimisticLockStrategy } from './database/pessimistic-lock.strategy';
import { RowLockStrategy } from './database/row-lock.strategy';
import { assertFastPaths } from './fast-paths-option';
import { ZooKeeperLockStrategy } from './zookeeper/zookeeper-lock.strategy';

describe('the fastPaths option', () => {
  it('defaults to true and takes only a boolean', () => {
    expect(assertFastPaths(undefined)).toBe(true);
    expect(assertFastPaths(false)).toBe(false);
    expect(() => assertFastPaths('no')).toThrow(InvalidLockOptionsError);
  });

  it('is refused, naming it, by every strategy and by optimisticUpdate when it is not a boolean', async () => {
    const bad = 'off' as unknown as boolean;
    const mysql = { type: 'mysql', url: 'mysql://user:pw@127.0.0.1:1/db' } as const;
    expect(() => new RowLockStrategy({ connection: mysql, fastPaths: bad })).toThrow(expect.objectContaining({ option: 'fastPaths' }));
    expect(() => new PessimisticLockStrategy({ connection: mysql, fastPaths: bad })).toThrow(expect.objectContaining({ option: 'fastPaths' }));
    const manager = { createQueryBuilder: () => undefined } as unknown as EntityManager;
    await expect(optimisticUpdate({ manager, entity: 'item', id: 1, expectedVersion: 1, set: {}, fastPaths: bad })).rejects.toMatchObject({ option: 'fastPaths' });
  });
});

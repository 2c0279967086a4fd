import type { DataSourceOptions } from 'typeorm';
import { maxHeldConnectionsFor } from './connection-slots';
import { poolSizeOf } from './pool-size';

describe('poolSizeOf: the pool TypeORM builds from the options', () => {
  it.each([
    ['mysql, no size: mysql2 default', { type: 'mysql' }, 10],
    ['mariadb, poolSize', { type: 'mariadb', poolSize: 4 }, 4],
    ['mysql, extra.connectionLimit wins', { type: 'mysql', poolSize: 4, extra: { connectionLimit: 6 } }, 6],
    ['mysql, connectionLimit 0: no limit', { type: 'mysql', extra: { connectionLimit: 0 } }, Number.POSITIVE_INFINITY],
    ['mysql, the replication master', { type: 'mysql', poolSize: 9, replication: { master: { poolSize: 3 }, slaves: [] } }, 3],
    ['postgres, no size: pg-pool default', { type: 'postgres' }, 10],
    ['postgres, poolSize', { type: 'postgres', poolSize: 2 }, 2],
    ['postgres, extra.max wins', { type: 'postgres', poolSize: 2, extra: { max: 5 } }, 5],
    ['postgres, 0 counts as unset', { type: 'postgres', poolSize: 0 }, 10],
    ['sqlite: not known', { type: 'better-sqlite3', database: ':memory:' }, undefined],
  ])('%s', (_, options, size) => {
    expect(poolSizeOf(options as DataSourceOptions)).toBe(size);
  });
});

describe('maxHeldConnectionsFor', () => {
  it('defaults to 8, lowered to one below a smaller pool', () => {
    expect(maxHeldConnectionsFor(undefined, undefined)).toBe(8);
    expect(maxHeldConnectionsFor(undefined, 10)).toBe(8);
    expect(maxHeldConnectionsFor(undefined, 5)).toBe(4);
    expect(maxHeldConnectionsFor(undefined, 2)).toBe(1);
    expect(maxHeldConnectionsFor(undefined, Number.POSITIVE_INFINITY)).toBe(8);
  });

  it('keeps a given value below the pool size, and refuses one that is not, naming both numbers and the fix', () => {
    expect(maxHeldConnectionsFor(3, 4)).toBe(3);
    expect(() => maxHeldConnectionsFor(4, 4)).toThrow(/"maxHeldConnections": 4 is not below the pool size of 4 connections.*at most 3.*poolSize/);
    expect(() => maxHeldConnectionsFor(8, 2)).toThrow(/8 is not below the pool size of 2/);
  });

  it('refuses a pool of one connection, and a value that is not a whole number ≥ 1', () => {
    expect(() => maxHeldConnectionsFor(undefined, 1)).toThrow(/"dataSource": its pool has 1 connection/);
    expect(() => maxHeldConnectionsFor(0, 10)).toThrow(/expected a whole number ≥ 1, got 0/);
    expect(() => maxHeldConnectionsFor(1.5, 10)).toThrow(/expected a whole number ≥ 1/);
  });
});

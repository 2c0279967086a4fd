import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { fenceTableOf, LOCK_TABLES } from './lock-table.sql';

describe('fenceTableOf (the pessimistic strategy\'s fencing table)', () => {
  it('gives the default row table, also when named, the default fencing table', () => {
    expect(fenceTableOf(LOCK_TABLES.rows, false)).toBe(LOCK_TABLES.fences);
    expect(fenceTableOf(LOCK_TABLES.rows, true)).toBe(LOCK_TABLES.fences);
  });

  it('compares names in lower case only where the server may fold them (MySQL/MariaDB)', () => {
    expect(fenceTableOf('Distributed_Lock_Rows', true)).toBe(LOCK_TABLES.fences);
    expect(fenceTableOf('Distributed_Lock_Rows', false)).toBe('Distributed_Lock_Rows_fences');
  });

  it('gives another table its name + "_fences", and refuses one that would share the default fencing table', () => {
    expect(fenceTableOf('shop_locks', true)).toBe('shop_locks_fences');
    expect(fenceTableOf('x'.repeat(55), false)).toBe(`${'x'.repeat(55)}_fences`);
    expect(() => fenceTableOf('distributed_lock', false)).toThrow(InvalidLockOptionsError);
    expect(() => fenceTableOf('DISTRIBUTED_LOCK', true)).toThrow(/distributed_lock_fences|DISTRIBUTED_LOCK_fences/);
    expect(fenceTableOf('DISTRIBUTED_LOCK', false)).toBe('DISTRIBUTED_LOCK_fences');
  });

  it('gives a name over 55 characters its first 46, a hash of the whole name as given and "_fences": 62 characters, never shared', () => {
    const stem = 'x'.repeat(55);
    const [a, b] = [fenceTableOf(`${stem}_a`, false), fenceTableOf(`${stem}_b`, false)];
    expect(a).toMatch(new RegExp(`^${'x'.repeat(46)}_[0-9a-f]{8}_fences$`));
    expect(a).toHaveLength(62);
    expect(b).not.toBe(a);
    // Only the case differs: another table where the server keeps case (MariaDB's default on Linux).
    expect(fenceTableOf(`${stem}_A`, true)).not.toBe(a);
    expect(fenceTableOf(`${stem}_A`, true).toLowerCase()).not.toBe(a);
  });

  it('refuses a name of 55 characters shaped as a longer name\'s fencing table before "_fences"', () => {
    const long = `${'x'.repeat(55)}_a`;
    const taken = fenceTableOf(long, false).slice(0, -'_fences'.length);
    expect(taken).toHaveLength(55);
    expect(() => fenceTableOf(taken, false)).toThrow(InvalidLockOptionsError);
    expect(() => fenceTableOf(taken, true)).toThrow(/8 hexadecimal digits/);
    expect(fenceTableOf(`${'x'.repeat(46)}_0123456z`, false)).toBe(`${'x'.repeat(46)}_0123456z_fences`);
  });
});

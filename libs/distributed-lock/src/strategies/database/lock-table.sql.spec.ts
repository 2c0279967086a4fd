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

  it('gives a name over 55 characters its first 47, a hash of the whole name as given and "_fences": 63 characters, never a shorter name\'s', () => {
    const stem = 'x'.repeat(55);
    const [a, b] = [fenceTableOf(`${stem}_a`, false), fenceTableOf(`${stem}_b`, false)];
    expect(a).toMatch(new RegExp(`^${'x'.repeat(47)}_[0-9a-f]{8}_fences$`));
    expect(a).toHaveLength(63);
    expect(fenceTableOf(stem, false)).toHaveLength(62);
    expect(b).not.toBe(a);
    // Only the case differs: another table where the server keeps case (MariaDB's default on Linux).
    expect(fenceTableOf(`${stem}_A`, true)).not.toBe(a);
    // A 55-character name shaped as a long name's fencing table before "_fences" is its own, and allowed.
    const shaped = a.slice(0, -'_fences'.length).slice(0, 55);
    expect(fenceTableOf(shaped, false)).toBe(`${shaped}_fences`);
    expect(fenceTableOf(shaped, false)).not.toBe(a);
  });
});

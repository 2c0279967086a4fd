import { redisLockKeys } from './redis-keys';

describe('redisLockKeys', () => {
  it('puts every key of a lock in one hash slot', () => {
    const { keys, channel } = redisLockKeys('dlock:', 'stock:42');
    for (const key of [...keys, channel]) expect(key.startsWith('dlock:{stock:42}:')).toBe(true);
  });

  it('encodes braces so a user key cannot change the hash tag, and stays one-to-one', () => {
    expect(redisLockKeys('dlock:', 'a}b{c').keys[0]).toBe('dlock:{a%7Db%7Bc}:lock');
    expect(redisLockKeys('dlock:', 'a%7Db').keys[0]).not.toBe(redisLockKeys('dlock:', 'a}b').keys[0]);
  });
});

import { RedisLockKeyNames, redisLockKeys, redisSemaphoreKeys } from './redis-keys';

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

describe('redisSemaphoreKeys', () => {
  it('puts a semaphore in the hash slot of a lock of the same name, in keys of its own', () => {
    const semaphore = redisSemaphoreKeys('dlock:', 'pay{x}').keys;
    const lock = redisLockKeys('dlock:', 'pay{x}').keys;
    for (const key of semaphore) expect(key.startsWith('dlock:{pay%7Bx%7D}:')).toBe(true);
    expect(semaphore.filter((key) => (lock as readonly string[]).includes(key))).toEqual([]);
    expect(new RedisLockKeyNames('dlock:', 10, redisSemaphoreKeys).of('pay{x}')).toEqual(redisSemaphoreKeys('dlock:', 'pay{x}'));
  });
});

describe('RedisLockKeyNames', () => {
  it('gives the same names as redisLockKeys, built once per key', () => {
    const names = new RedisLockKeyNames('ns:');
    const first = names.of('order:{1}');
    expect(first).toEqual(redisLockKeys('ns:', 'order:{1}'));
    expect(names.of('order:{1}')).toBe(first);
  });

  it('stays bounded: past its limit it starts over', () => {
    const names = new RedisLockKeyNames('ns:', 2);
    const a = names.of('a');
    names.of('b');
    names.of('c'); // clears, then holds c
    expect(names.of('a')).not.toBe(a);
    expect(names.of('a')).toEqual(a);
  });
});

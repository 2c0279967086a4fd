import { redisKeySlot } from './redis-key-slot';

describe('redisKeySlot', () => {
  it('gives the slots Redis gives (CLUSTER KEYSLOT)', () => {
    // Values from the Redis Cluster specification and `CLUSTER KEYSLOT` on Redis 7.
    expect(redisKeySlot('123456789')).toBe(0x31c3 % 16384);
    expect(redisKeySlot('foo')).toBe(12182);
    expect(redisKeySlot('bar')).toBe(5061);
    expect(redisKeySlot('foo{}{bar}')).toBe(8363);
    expect(redisKeySlot('é{x')).toBe(8265);
  });

  it('hashes the tag alone, unless it is empty', () => {
    expect(redisKeySlot('{user1000}.following')).toBe(redisKeySlot('user1000'));
    expect(redisKeySlot('dlock:{a}:lock')).toBe(redisKeySlot('dlock:{a}:queue'));
    expect(redisKeySlot('foo{}{bar}')).not.toBe(redisKeySlot('bar'));
    expect(redisKeySlot('foo{{bar}}zap')).toBe(redisKeySlot('{bar'));
  });
});

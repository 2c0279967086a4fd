import { EventEmitter } from 'node:events';
import type { RedisLockClient } from './redis-client.type';
import { RedisLeaseCheck } from './redis-lease-check';

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('RedisLeaseCheck', () => {
  const clientOf = (emitter: EventEmitter): Pick<RedisLockClient, 'on' | 'off'> => emitter as unknown as Pick<RedisLockClient, 'on' | 'off'>;

  it('checks every lease at each (re)connection and tells the holder of one the server no longer has, once', async () => {
    const client = new EventEmitter();
    const check = new RedisLeaseCheck(clientOf(client));
    const lost: string[] = [];
    let heldA = true;
    check.watch('a', () => Promise.resolve(heldA), (reason) => lost.push(`a:${reason}`));
    check.watch('b', () => Promise.resolve(true), (reason) => lost.push(`b:${reason}`));
    client.emit('ready');
    await settle();
    expect(lost).toEqual([]);
    heldA = false;
    client.emit('ready');
    await settle();
    client.emit('ready');
    await settle();
    expect(lost).toEqual(['a:removed']);
  });

  it('leaves a lease whose check failed, or that was released meanwhile, to its watchdog', async () => {
    const client = new EventEmitter();
    const check = new RedisLeaseCheck(clientOf(client));
    const lost: string[] = [];
    check.watch('down', () => Promise.reject(new Error('Connection is closed.')), () => lost.push('down'));
    let answer: (held: boolean) => void = () => undefined;
    const stop = check.watch('released', () => new Promise<boolean>((resolve) => (answer = resolve)), () => lost.push('released'));
    client.emit('ready');
    stop();
    answer(false);
    await settle();
    expect(lost).toEqual([]);
  });

  it('stops listening to the client when closed (a user\'s client outlives the strategy)', () => {
    const client = new EventEmitter();
    const check = new RedisLeaseCheck(clientOf(client));
    expect(client.listenerCount('ready')).toBe(1);
    check.close();
    expect(client.listenerCount('ready')).toBe(0);
  });
});

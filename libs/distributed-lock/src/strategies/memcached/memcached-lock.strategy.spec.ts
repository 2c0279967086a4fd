import type { MemcacheClient } from 'memcache-client';
import { InvalidLockKeyError, InvalidLockOptionsError } from '../../errors';
import type { LockRequest } from '../../locking/lock-lease';
import type { MemcachedLockClient } from './memcached-client.type';
import { MemcachedLockStrategy } from './memcached-lock.strategy';

/** A memcached reply word, as memcache-client rejects with it. */
function refused(word: string): Error {
  return Object.assign(new Error(word), { cmdTokens: [word] });
}

/**
 * A stand-in for one memcached server, with memcache-client's promise API: items with a CAS value and an
 * expiry in seconds (a negative one stores the item already expired). Every command is logged.
 */
class FakeMemcached {
  readonly items = new Map<string, { value: string; cas: number; expiry: number }>();
  readonly log: string[] = [];
  private nextCas = 1;
  /** Runs before the next `cas` command is applied: a write that slips in between a read and a compare-and-set. */
  beforeNextCas: (() => void) | undefined;
  shutdowns = 0;

  store(key: string, value: string, expiry: number): void {
    if (expiry < 0) this.items.delete(key);
    else this.items.set(key, { value, cas: this.nextCas++, expiry });
  }

  readonly client: { -readonly [K in keyof MemcachedLockClient]: MemcachedLockClient[K] } = {
    add: (async (key: string, value: string, options: { lifetime: number }) => {
      this.log.push(`add ${key} ${value} ${options.lifetime}`);
      if (this.items.has(key)) throw refused('NOT_STORED');
      this.store(key, value, options.lifetime);
      return ['STORED'];
    }) as unknown as MemcacheClient['add'],
    gets: (async (key: string) => {
      this.log.push(`gets ${key}`);
      const item = this.items.get(key);
      return item && { tokens: [], value: item.value, casUniq: String(item.cas) };
    }) as unknown as MemcacheClient['gets'],
    cas: (async (key: string, value: string, options: { casUniq: string; lifetime: number }) => {
      this.log.push(`cas ${key} ${value} ${options.lifetime} ${options.casUniq}`);
      const slipIn = this.beforeNextCas;
      this.beforeNextCas = undefined;
      slipIn?.();
      const item = this.items.get(key);
      if (!item) throw refused('NOT_FOUND');
      if (String(item.cas) !== String(options.casUniq)) throw refused('EXISTS');
      this.store(key, value, options.lifetime);
      return ['STORED'];
    }) as unknown as MemcacheClient['cas'],
    version: (async () => ['VERSION', '1.6.18']) as unknown as MemcacheClient['version'],
    shutdown: () => {
      this.shutdowns += 1;
    },
  };
}

const request = (owner: string, ttlMs = 5_000, key = 'stock:1'): LockRequest => ({ key, owner, ttlMs, mode: 'exclusive' });

describe('MemcachedLockStrategy (fake server)', () => {
  let server: FakeMemcached;
  let strategy: MemcachedLockStrategy;

  beforeEach(() => {
    server = new FakeMemcached();
    strategy = new MemcachedLockStrategy({ client: server.client as MemcacheClient });
  });

  it('takes a free lock with one add: the owner as value, the lease in whole seconds plus two', async () => {
    const grant = await strategy.tryAcquire(request('a', 2_500));
    expect(grant).toMatchObject({ key: 'stock:1', owner: 'a', mode: 'exclusive' });
    expect(grant?.fencingToken).toBeUndefined();
    expect(server.log).toEqual(['add dlock:stock:1 a 5']);
    expect(await strategy.tryAcquire(request('b'))).toBeNull();
  });

  it('extends and releases only for the owner, never by a blind write or delete', async () => {
    const grant = await strategy.tryAcquire(request('a'));
    if (!grant) throw new Error('not granted');
    const impostor = { ...grant, owner: 'b' };
    expect(await strategy.extend(impostor, 5_000)).toBeNull();
    expect(await strategy.release(impostor)).toBe(false);
    expect(server.items.get('dlock:stock:1')?.value).toBe('a');
    const extended = await strategy.extend(grant, 9_000);
    expect(extended?.expiresAt).toBeGreaterThan(grant.expiresAt);
    expect(server.items.get('dlock:stock:1')?.expiry).toBe(11);
    expect(await strategy.release(grant)).toBe(true);
    expect(server.items.has('dlock:stock:1')).toBe(false);
    expect(await strategy.release(grant)).toBe(false);
    // Every change after the add was a compare-and-set under the CAS value read with the owner.
    for (const line of server.log.filter((entry) => !entry.startsWith('add') && !entry.startsWith('gets'))) expect(line).toMatch(/^cas dlock:stock:1 \S+ -?\d+ \d+$/);
  });

  it('reads again when the item changed between the read and the compare-and-set, and still acts only for the owner', async () => {
    const grant = await strategy.tryAcquire(request('a'));
    if (!grant) throw new Error('not granted');
    // An extension of ours lands first: the release's compare-and-set is refused, it reads again, and releases.
    server.beforeNextCas = () => server.store('dlock:stock:1', 'a', 6);
    expect(await strategy.release(grant)).toBe(true);
    expect(server.items.has('dlock:stock:1')).toBe(false);

    const again = await strategy.tryAcquire(request('c'));
    if (!again) throw new Error('not granted');
    // The lease ran out and someone else took the key in between: the extension must not touch it.
    server.beforeNextCas = () => server.store('dlock:stock:1', 'd', 6);
    expect(await strategy.extend(again, 5_000)).toBeNull();
    expect(server.items.get('dlock:stock:1')?.value).toBe('d');
  });

  it('reports an item that expired between the read and the write as not held', async () => {
    const grant = await strategy.tryAcquire(request('a'));
    if (!grant) throw new Error('not granted');
    server.beforeNextCas = () => server.items.delete('dlock:stock:1');
    expect(await strategy.extend(grant, 5_000)).toBeNull();
  });

  it('hands a lock over to the next owner with its own lease, only from the holder', async () => {
    const grant = await strategy.tryAcquire(request('a', 30_000));
    if (!grant) throw new Error('not granted');
    expect(await strategy.transfer({ ...grant, owner: 'x' }, request('b', 1_000))).toBeNull();
    const next = await strategy.transfer(grant, request('b', 1_000));
    expect(next).toMatchObject({ owner: 'b', key: 'stock:1' });
    expect(server.items.get('dlock:stock:1')).toMatchObject({ value: 'b', expiry: 3 });
    expect(await strategy.release(grant)).toBe(false);
    expect(await strategy.release(next as NonNullable<typeof next>)).toBe(true);
  });

  it('names the holder on query, owner and mode only, with no queue; nobody on a free key', async () => {
    expect(await strategy.inspect('stock:1')).toEqual({ holders: [] });
    await strategy.tryAcquire(request('a'));
    const inspection = await strategy.inspect('stock:1');
    expect(inspection).toEqual({ holders: [{ owner: 'a', mode: 'exclusive' }] });
    expect(inspection.waiters).toBeUndefined();
    expect(server.log.filter((line) => !line.startsWith('add') && !line.startsWith('gets'))).toEqual([]);
  });

  it('breaks the lock by a compare-and-set under the CAS value read with its holder, never a newer holder', async () => {
    expect(await strategy.breakLock('stock:1')).toEqual([]);
    await strategy.tryAcquire(request('a'));
    // The holder's extension slips in: the same owner still holds it, so it is read again and broken.
    server.beforeNextCas = () => server.store('dlock:stock:1', 'a', 6);
    expect(await strategy.breakLock('stock:1')).toEqual([{ owner: 'a', mode: 'exclusive' }]);
    expect(server.items.has('dlock:stock:1')).toBe(false);
    for (const line of server.log.filter((entry) => entry.startsWith('cas'))) expect(line).toMatch(/^cas dlock:stock:1 a -1 \d+$/);

    await strategy.tryAcquire(request('b'));
    // The lease ran out and someone else took the key between the read and the write: left alone.
    server.beforeNextCas = () => server.store('dlock:stock:1', 'c', 6);
    expect(await strategy.breakLock('stock:1')).toEqual([]);
    expect(server.items.get('dlock:stock:1')?.value).toBe('c');
    // Gone between the read and the write: nothing ended by the break.
    server.beforeNextCas = () => server.items.delete('dlock:stock:1');
    expect(await strategy.breakLock('stock:1')).toEqual([]);
  });

  it('encodes keys for the text protocol and refuses, before any command, a key too long once encoded', async () => {
    await strategy.tryAcquire(request('a', 1_000, 'a b%'));
    expect(server.log).toEqual(['add dlock:a%20b%25 a 3']);
    expect(() => strategy.validateKey(' '.repeat(82))).toThrow(InvalidLockKeyError);
    expect(server.log).toHaveLength(1);
  });

  it('says at the first read that memcached runs without CAS (-C), where no compare-and-set is ever stored', async () => {
    const grant = await strategy.tryAcquire(request('a'));
    if (!grant) throw new Error('not granted');
    // memcached -C answers every gets with the CAS value 0 (and refuses every cas).
    const gets = server.client.gets;
    server.client.gets = (async (key: string) => ({ ...(await gets(key)), casUniq: '0' })) as unknown as MemcacheClient['gets'];
    await expect(strategy.extend(grant, 5_000)).rejects.toThrow(/without CAS \(-C\)/);
    await expect(strategy.release(grant)).rejects.toThrow(/without CAS/);
    expect(server.log.filter((line) => line.startsWith('cas'))).toEqual([]);
  });

  it('shuts down only a client it created', async () => {
    await strategy.close();
    expect(server.shutdowns).toBe(0);
  });

  it('validates its options', () => {
    const client = server.client as MemcacheClient;
    expect(() => new MemcachedLockStrategy({ client, fair: true } as never)).toThrow(/fair.*unknown option/);
    expect(() => new MemcachedLockStrategy({ client, connection: '127.0.0.1:11211' })).toThrow(/either `client`/);
    expect(() => new MemcachedLockStrategy({})).toThrow(/give `client`/);
    expect(() => new MemcachedLockStrategy({ client: {} as MemcacheClient })).toThrow(/add, gets and cas/);
    expect(() => new MemcachedLockStrategy({ connection: 'localhost' })).toThrow(/host:port/);
    expect(() => new MemcachedLockStrategy({ connection: 42 as never })).toThrow(InvalidLockOptionsError);
    expect(() => new MemcachedLockStrategy({ client, namespace: 'a b' })).toThrow(/namespace/);
    expect(() => new MemcachedLockStrategy({ client, name: '' })).toThrow(/name/);
    expect(() => new MemcachedLockStrategy({ client, localHandover: { passes: -1 } })).toThrow(/passes/);
    expect(new MemcachedLockStrategy({ client, localHandover: false }).handOverLimits).toEqual({ passes: 0, windowMs: 0 });
  });

  it('refuses a lease memcached would read as a Unix time, before any command', async () => {
    await expect(strategy.tryAcquire(request('a', 31 * 24 * 3_600_000))).rejects.toBeInstanceOf(InvalidLockOptionsError);
    expect(server.log).toEqual([]);
  });
});

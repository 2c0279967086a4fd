import { randomUUID } from 'node:crypto';
import { LockManager, LockService, type LockHandle, type LockInfo, type PermitHandle } from '@app/distributed-lock';
import { EtcdLockStrategy } from '@app/distributed-lock/strategies/etcd';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run through npm test`);
  return value;
};

async function allKeys(service: LockService, prefix: string, limit: number): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 2_000; pages += 1) {
    const page: { locks: readonly LockInfo[]; next: string | null } = await service.queryPrefix(prefix, { limit, cursor });
    keys.push(...page.locks.map((lock) => lock.key));
    if (page.next === null) return keys;
    cursor = page.next;
  }
  throw new Error('never ended');
}

/**
 * What the etcd listing must get right beyond the contract (found by an adversarial review): the lock named
 * "sem" (stored as "%73em") listed once; locks whose names sort after the semaphores' folder reached
 * however many permits fill a page's range read; the cursor after a longest key accepted back.
 */
describe('etcd queryPrefix: the semaphores\' folder, the lock named "sem", long keys', () => {
  const managers: LockManager[] = [];
  const handles: Array<LockHandle | PermitHandle> = [];
  let namespace = '';
  const make = (instanceName: string): LockService =>
    new LockService(managers[managers.push(new LockManager(new EtcdLockStrategy({ connection: { hosts: env('LOCK_TEST_ETCD').split(',') }, namespace }), { instanceName })) - 1]);
  beforeEach(() => {
    namespace = `prefix-${randomUUID().slice(0, 8)}/`;
  });
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((h) => h.release()));
    await Promise.all(managers.splice(0).map((m) => m.close()));
  });

  it('lists the lock named "sem" once for prefix ""', async () => {
    const holder = make('holder');
    handles.push(await holder.acquire('sem', { ttl: 20_000 }));
    handles.push(await holder.acquire('alpha', { ttl: 20_000 }));
    const page = await make('observer').queryPrefix('');
    expect(page.locks.map((lock) => lock.key).sort()).toEqual(['alpha', 'sem']);
  });

  it.each([1, 2, 5])('with 4*limit permits held, paging prefix "" (limit %i) still reaches the locks after the semaphores folder', async (limit) => {
    const holder = make('holder');
    for (let i = 0; i < 4 * limit; i += 1) handles.push(await holder.acquirePermit('pool', { permits: 4 * limit, ttl: 20_000 }));
    handles.push(await holder.acquire('alpha', { ttl: 20_000 }));
    handles.push(await holder.acquire('semx', { ttl: 20_000 }));
    handles.push(await holder.acquire('zulu', { ttl: 20_000 }));
    const observer = make('observer');
    expect((await allKeys(observer, '', limit)).sort()).toEqual(['alpha', 'semx', 'zulu']);
    expect((await allKeys(observer, 's', limit)).sort()).toEqual(['semx']);
  });

  it('the cursor after a long non-ASCII key (512 characters, the most a key may have) is accepted back', async () => {
    const holder = make('holder');
    const long = `k${'日'.repeat(511)}`;
    handles.push(await holder.acquire(long, { ttl: 20_000 }));
    handles.push(await holder.acquire('z', { ttl: 20_000 }));
    const observer = make('observer');
    const first = await observer.queryPrefix('', { limit: 1 });
    expect(first.locks.map((l) => l.key)).toEqual([long]);
    expect(first.next).not.toBeNull();
    const second = await observer.queryPrefix('', { limit: 1, cursor: first.next });
    expect(second.locks.map((l) => l.key)).toEqual(['z']);
  });
});

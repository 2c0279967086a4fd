import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { Injectable, Module, type CanActivate, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockLostError } from '../../errors/lock-lost.error';
import { lockKeyHash } from '../../locking/lock-key-hash';
import { LockService } from '../../locking/lock-service';
import { InMemoryLockStrategy } from '../../strategies/in-memory/in-memory-lock.strategy';
import { RedisLockStrategy } from '../../strategies/redis/redis-lock.strategy';
import { PessimisticLockStrategy } from '../../strategies/database/pessimistic-lock.strategy';
import { DistributedLockModule } from '../distributed-lock.module';
import type { LockOperationsOptions } from './lock-operations-options';

/** Lets a request in when it carries the operator's header: the user's own guard, as the docs show it. */
@Injectable()
class OperatorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-operator'] === 'yes';
  }
}

describe('DistributedLockModule.operations', () => {
  let app: INestApplication | undefined;
  let base = '';

  /** An application on a real HTTP port: the root module, and the operations module when given options. */
  const start = async (operations: LockOperationsOptions | undefined | false, extra: Record<string, unknown> = {}, operationTimeout?: number): Promise<LockService> => {
    @Module({
      imports: [
        DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy(), ...extra }, keyPrefix: 'shop:', logEvents: false, ...(operationTimeout ? { operationTimeout } : {}) }),
        ...(operations === false ? [] : [DistributedLockModule.operations(operations)]),
      ],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    return app.get(LockService);
  };
  const get = (path: string, headers: Record<string, string> = {}): Promise<Response> => fetch(`${base}${path}`, { headers });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('is never mounted unless imported', async () => {
    await start(false);
    expect((await get('/locks?key=a')).status).toBe(404);
  });

  it("answers who holds each key and who waits, with the key hashed by default and the app's prefix applied", async () => {
    const locks = await start(undefined);
    const held = await locks.acquire('order:alice@example.com', { ttl: 10_000 });
    const waiting = locks.acquire('order:alice@example.com', { waitTimeout: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const response = await get(`/locks?key=${encodeURIComponent('order:alice@example.com')}&key=free`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { strategy: string; locks: Array<{ key: string; held: unknown[]; pending: unknown[] }> };
    expect(JSON.stringify(body)).not.toContain('alice');
    expect(body.strategy).toBe('default');
    expect(body.locks).toEqual([
      {
        key: `key#${lockKeyHash('shop:order:alice@example.com')}`,
        held: [{ mode: 'exclusive', owner: { id: held.owner, host: hostname(), pid: process.pid, instance: null }, fencingToken: held.fencingToken, grantedAt: expect.any(Number), expiresAt: expect.any(Number) }],
        pending: [{ mode: 'exclusive', owner: expect.objectContaining({ host: hostname(), pid: process.pid }) }],
      },
      { key: `key#${lockKeyHash('shop:free')}`, held: [], pending: [] },
    ]);
    await held.release();
    await (await waiting).release();
  });

  it('answers who holds places of each semaphore, its size and its queue', async () => {
    const locks = await start({ keys: 'plain' });
    const permit = await locks.acquirePermit('payments', { permits: 3, weight: 2, ttl: 10_000 });
    const response = await get('/locks/permits?key=payments');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      strategy: 'default',
      semaphores: [
        {
          key: 'shop:payments',
          permits: 3,
          inUse: 2,
          held: [{ owner: { id: permit.owner, host: hostname(), pid: process.pid, instance: null }, weight: 2, fencingToken: permit.fencingToken, grantedAt: expect.any(Number), expiresAt: expect.any(Number) }],
          pending: [],
        },
      ],
    });
    await permit.release();
    expect((await get('/locks/permits')).status).toBe(400);
  });

  it('lists the held keys under a prefix a page at a time, keys shown as the options say, with 400 for bad paging', async () => {
    const locks = await start({ keys: 'plain' });
    const held = await Promise.all(['stock:a', 'stock:b', 'stock:c', 'report'].map((key) => locks.acquire(key, { ttl: 10_000 })));
    const first = (await (await get('/locks/prefix?prefix=stock:&limit=2')).json()) as { strategy: string; locks: Array<{ key: string; held: Array<{ owner: { id: string } }> }>; next: string | null };
    expect(first.strategy).toBe('default');
    expect(first.locks.map((lock) => lock.key)).toEqual(['shop:stock:a', 'shop:stock:b']);
    expect(first.locks[0].held[0].owner.id).toBe(held[0].owner);
    const second = (await (await get(`/locks/prefix?prefix=stock:&limit=2&cursor=${encodeURIComponent(first.next ?? '')}`)).json()) as { locks: Array<{ key: string }>; next: string | null };
    expect([second.locks.map((lock) => lock.key), second.next]).toEqual([['shop:stock:c'], null]);
    const problems = await Promise.all([get('/locks/prefix'), get('/locks/prefix?prefix=s&limit=0'), get('/locks/prefix?prefix=s&limit=x'), get('/locks/prefix?prefix=s&cursor=')]);
    expect(problems.map((response) => response.status)).toEqual([400, 400, 400, 400]);
    await Promise.all(held.map((lock) => lock.release()));
  });

  it("shows keys as they are with keys: 'plain', at the route given", async () => {
    const locks = await start({ path: 'ops/locks', keys: 'plain' });
    const held = await locks.acquire('stock-report', { ttl: 10_000 });
    const body = (await (await get('/ops/locks?key=stock-report')).json()) as { locks: Array<{ key: string; held: Array<{ owner: { id: string } }> }> };
    expect(body.locks[0].key).toBe('shop:stock-report');
    expect(body.locks[0].held[0].owner.id).toBe(held.owner);
    await held.release();
  });

  it("runs behind the user's guard", async () => {
    await start({ guards: [OperatorGuard] });
    expect((await get('/locks?key=a')).status).toBe(403);
    expect((await get('/locks?key=a', { 'x-operator': 'yes' })).status).toBe(200);
  });

  it('mounts the break only with allowBreak: the holder is told, and the answer names the hold ended', async () => {
    const locks = await start({ allowBreak: true, keys: 'plain' });
    const outcome = locks
      .withLock('stock-report', async (lock) => {
        await new Promise((resolve) => lock.signal.addEventListener('abort', resolve));
      })
      .then(() => undefined, (error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const [held] = ((await (await get('/locks?key=stock-report')).json()) as { locks: Array<{ held: Array<{ owner: { id: string } }> }> }).locks[0].held;
    expect((await post('/locks/break', { key: 'stock-report' })).status).toBe(400);
    const response = await post('/locks/break', { key: 'stock-report', reason: 'ops: stuck since 02:00' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ strategy: 'default', key: 'shop:stock-report', broken: [expect.objectContaining({ owner: held.owner })] });
    const error = await outcome;
    expect(error).toBeInstanceOf(LockLostError);
    expect((error as LockLostError).reason).toBe('broken');
  });

  it('has no break route without allowBreak', async () => {
    await start(undefined);
    expect((await post('/locks/break', { key: 'k', reason: 'ops' })).status).toBe(404);
  });

  it('answers bad requests with 400 and what to fix, before any server is touched', async () => {
    await start(undefined, { pessimistic: new PessimisticLockStrategy({ connection: { type: 'mysql', host: '127.0.0.1', port: 1 } }) });
    const problems = await Promise.all([
      get('/locks'),
      get(`/locks?${Array.from({ length: 101 }, (_, i) => `key=k${i}`).join('&')}`),
      get('/locks?key=k&strategy=nope'),
      get(`/locks?key=${'x'.repeat(300)}&strategy=pessimistic`),
      get('/locks?key=k&strategy=pessimistic'),
    ]);
    expect(problems.map((response) => response.status)).toEqual([400, 400, 400, 400, 400]);
    const unsupported = (await problems[4].json()) as { error: string; message: string };
    expect(unsupported.error).toBe('InvalidLockOptionsError');
  });

  it('never shows a hashed key in a refusal, however the key was quoted (escaped, cut short)', async () => {
    await start(undefined);
    for (const path of [`/locks?key=${encodeURIComponent('alice@example.com\t')}`, `/locks?key=alice%40example.com${'x'.repeat(500)}`, `/locks/permits?key=${encodeURIComponent('alice@example.com\n')}`]) {
      const response = await get(path);
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: string; message: string };
      expect(body.error).toBe('InvalidLockKeyError');
      expect(body.message).not.toContain('alice');
      expect(body.message).toMatch(/\(key key#[0-9a-f]{16}\)$/);
    }
  });

  it('answers 503 when the backend does not answer within the operation timeout', async () => {
    await start({ keys: 'plain' }, { redis: new RedisLockStrategy({ connection: 'redis://127.0.0.1:1' }) }, 300);
    const response = await get('/locks?key=k&strategy=redis');
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: string }).error).toBe('LockBackendUnavailableError');
  });

  it('refuses bad options with a typed error naming the option', () => {
    expect(() => DistributedLockModule.operations({ path: 'a b' })).toThrow(InvalidLockOptionsError);
    expect(() => DistributedLockModule.operations({ guards: ['x'] as unknown as [] })).toThrow(/operations.guards/);
    expect(() => DistributedLockModule.operations({ allowBreak: 'yes' as unknown as boolean })).toThrow(/operations.allowBreak/);
    expect(() => DistributedLockModule.operations({ keys: 'none' as 'plain' })).toThrow(/operations.keys/);
    expect(() => DistributedLockModule.operations({ route: 'x' } as LockOperationsOptions)).toThrow(/route/);
  });
});

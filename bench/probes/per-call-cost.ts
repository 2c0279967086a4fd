// Per-call cost, uncontended: where the time of one acquire + release goes, layer by layer.
// Usage: PROBE_REDIS_URL=redis://127.0.0.1:6379 node -r @swc-node/register bench/probes/per-call-cost.ts [iterations]
// Runs the layers interleaved, round after round, on one client each, and prints µs per acquire + release
// for each and the Redis commands each sent per iteration (INFO commandstats).
import { LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { Redis } from 'ioredis';
import { Mutex, Semaphore } from 'redis-semaphore';

const url = process.env.PROBE_REDIS_URL ?? 'redis://127.0.0.1:16379';
const iterations = Number(process.argv[2] ?? 2_000);

type Loop = (n: number) => Promise<void>;

async function commands(admin: Redis): Promise<number> {
  const stats = await admin.info('commandstats');
  let total = 0;
  for (const match of stats.matchAll(/calls=(\d+)/g)) total += Number(match[1]);
  return total;
}

async function main(): Promise<void> {
  const admin = new Redis(url);
  const peerClient = new Redis(url);
  const ours = new LockManager(new RedisLockStrategy({ connection: url }));
  const service = new LockService(ours);
  const strategy = new RedisLockStrategy({ connection: url });
  const loops: Record<string, Loop> = {
    'redis-semaphore Mutex': async (n) => {
      for (let i = 0; i < n; i += 1) {
        const mutex = new Mutex(peerClient, 'probe-m', { lockTimeout: 30_000 });
        await mutex.acquire();
        await mutex.release();
      }
    },
    'ours lock (LockService.acquire, waitTimeout)': async (n) => {
      for (let i = 0; i < n; i += 1) {
        const lock = await service.acquire('probe-l', { waitTimeout: 1_000 });
        await lock.release();
      }
    },
    'ours lock (LockService.tryAcquire)': async (n) => {
      for (let i = 0; i < n; i += 1) {
        const lock = await service.tryAcquire('probe-t');
        await lock?.release();
      }
    },
    'ours lock (strategy only)': async (n) => {
      for (let i = 0; i < n; i += 1) {
        const lease = await strategy.tryAcquire({ key: 'probe-s', owner: `o${i}`, ttlMs: 30_000, mode: 'exclusive' } as never);
        if (lease) await strategy.release(lease as never);
      }
    },
    'redis-semaphore Semaphore': async (n) => {
      for (let i = 0; i < n; i += 1) {
        const semaphore = new Semaphore(peerClient, 'probe-ps', 4, { lockTimeout: 30_000 });
        await semaphore.acquire();
        await semaphore.release();
      }
    },
    'ours permit (acquirePermit, waitTimeout)': async (n) => {
      for (let i = 0; i < n; i += 1) {
        const permit = await service.acquirePermit('probe-p', { permits: 4, waitTimeout: 1_000 });
        await permit.release();
      }
    },
  };
  for (const loop of Object.values(loops)) await loop(200);
  const totals = new Map<string, { ms: number; commands: number }>();
  for (let round = 0; round < 5; round += 1) {
    for (const [name, loop] of Object.entries(loops)) {
      const before = await commands(admin);
      const start = performance.now();
      await loop(iterations / 5);
      const ms = performance.now() - start;
      const sent = (await commands(admin)) - before - 1;
      const total = totals.get(name) ?? { ms: 0, commands: 0 };
      totals.set(name, { ms: total.ms + ms, commands: total.commands + sent });
    }
  }
  for (const [name, { ms, commands: sent }] of totals) {
    console.log(`${name.padEnd(45)} ${((ms * 1_000) / iterations).toFixed(1).padStart(7)} µs/iteration  ${(sent / iterations).toFixed(2)} commands/iteration`);
  }
  await ours.close();
  await strategy.close();
  await peerClient.quit();
  await admin.quit();
}

void main();

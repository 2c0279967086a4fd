// Per-call cost, uncontended: where the time of one acquire + release goes, layer by layer.
// Usage: PROBE_REDIS_URL=redis://127.0.0.1:6379 node -r @swc-node/register bench/probes/per-call-cost.ts [iterations]
// Runs the layers interleaved, round after round, on one client each, and prints for each: µs per acquire +
// release, the Redis commands sent per iteration (INFO commandstats; a script's own commands count), the
// server's CPU per iteration (INFO cpu) and this process's CPU per iteration (both with their I/O).
import { LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { Redis } from 'ioredis';
import { Mutex, Semaphore } from 'redis-semaphore';

const url = process.env.PROBE_REDIS_URL ?? 'redis://127.0.0.1:16379';
const iterations = Number(process.argv[2] ?? 2_000);

type Loop = (n: number) => Promise<void>;

/** The server's CPU so far (user + system), in µs. */
async function serverCpuUs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const seconds = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6;
}

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
  const totals = new Map<string, { ms: number; commands: number; serverUs: number; clientUs: number }>();
  for (let round = 0; round < 5; round += 1) {
    for (const [name, loop] of Object.entries(loops)) {
      const before = await commands(admin);
      const serverBefore = await serverCpuUs(admin);
      const clientBefore = process.cpuUsage();
      const start = performance.now();
      await loop(iterations / 5);
      const ms = performance.now() - start;
      const client = process.cpuUsage(clientBefore);
      const serverUs = (await serverCpuUs(admin)) - serverBefore;
      const sent = (await commands(admin)) - before - 2;
      const total = totals.get(name) ?? { ms: 0, commands: 0, serverUs: 0, clientUs: 0 };
      totals.set(name, { ms: total.ms + ms, commands: total.commands + sent, serverUs: total.serverUs + serverUs, clientUs: total.clientUs + client.user + client.system });
    }
  }
  const per = (value: number): string => (value / iterations).toFixed(1).padStart(6);
  console.log(`${'layer'.padEnd(45)} ${'µs/it'.padStart(7)}  ${'cmds/it'.padStart(7)}  ${'server CPU µs/it'.padStart(16)}  ${'client CPU µs/it'.padStart(16)}`);
  for (const [name, { ms, commands: sent, serverUs, clientUs }] of totals) {
    console.log(`${name.padEnd(45)} ${per(ms * 1_000).padStart(7)}  ${(sent / iterations).toFixed(2).padStart(7)}  ${per(serverUs).padStart(16)}  ${per(clientUs).padStart(16)}`);
  }
  await ours.close();
  await strategy.close();
  await peerClient.quit();
  await admin.quit();
}

void main();

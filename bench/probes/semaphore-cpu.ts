// CPU per critical section of a contended semaphore: ours and redis-semaphore's, W workers sharing one
// client in one process, 4 permits, no work inside. Prints sections per second, and the CPU each side
// (this process, the Redis server) spent per section, so the bottleneck is named, not guessed.
// Usage: PROBE_REDIS_URL=redis://127.0.0.1:6379 node -r @swc-node/register bench/probes/semaphore-cpu.ts [workers] [ms]
// PROBE_ONLY=ours (or redis-semaphore) runs one side, e.g. under --cpu-prof; PROBE_AUTOPIPELINE=1 gives both
// sides' clients ioredis's enableAutoPipelining (fewer writes, each a tick later).
import { LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { Redis } from 'ioredis';
import { Semaphore } from 'redis-semaphore';

const url = process.env.PROBE_REDIS_URL ?? 'redis://127.0.0.1:16379';
const workers = Number(process.argv[2] ?? 8);
const durationMs = Number(process.argv[3] ?? 3_000);
const only = process.env.PROBE_ONLY;

function parseUrl(value: string): { host: string; port: number } {
  const parsed = new URL(value);
  return { host: parsed.hostname, port: Number(parsed.port) };
}

type Section = () => Promise<void>;

async function serverCpuMs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const sys = Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1]);
  const user = Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1]);
  return (sys + user) * 1_000;
}

async function run(admin: Redis, name: string, section: Section): Promise<void> {
  const stopAt = Date.now() + durationMs;
  let sections = 0;
  const serverBefore = await serverCpuMs(admin);
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (Date.now() < stopAt) {
        await section();
        sections += 1;
      }
    }),
  );
  const elapsed = performance.now() - start;
  const cpu = process.cpuUsage(cpuBefore);
  const server = (await serverCpuMs(admin)) - serverBefore;
  const perSection = (ms: number): string => `${((ms * 1_000) / sections).toFixed(1)} µs`;
  console.log(
    `${name.padEnd(44)} ${Math.round((sections * 1_000) / elapsed)} cs/s  client CPU ${perSection((cpu.user + cpu.system) / 1_000)}/cs  server CPU ${perSection(server)}/cs`,
  );
}

async function main(): Promise<void> {
  const admin = new Redis(url);
  const pipelined = process.env.PROBE_AUTOPIPELINE === '1';
  const peerClient = pipelined ? new Redis({ ...parseUrl(url), enableAutoPipelining: true }) : new Redis(url);
  const manager = new LockManager(new RedisLockStrategy({ connection: pipelined ? { ...parseUrl(url), enableAutoPipelining: true } : url }));
  const service = new LockService(manager);
  const subjects: Record<string, Section> = {
    'redis-semaphore Semaphore (4)': async () => {
      const semaphore = new Semaphore(peerClient, 'cpu-ps', 4, { lockTimeout: 30_000, acquireTimeout: 60_000 });
      await semaphore.acquire();
      await semaphore.release();
    },
    'ours acquirePermit (4)': async () => {
      const permit = await service.acquirePermit('cpu-p', { permits: 4, waitTimeout: 60_000 });
      await permit.release();
    },
  };
  for (const [name, section] of Object.entries(subjects)) {
    if (only && !name.includes(only)) continue;
    await run(admin, name, section);
  }
  await manager.close();
  admin.disconnect();
  peerClient.disconnect();
  process.exit(0);
}

void main();

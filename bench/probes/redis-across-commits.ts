// The fair Redis lock across processes, for any checkout's library: is a change between two benchmark
// records the code's, or the run's? Loads the library from LIB (a checkout's libs/distributed-lock/src, run
// from that checkout so its tsconfig paths apply), so the same probe measures each commit; `floor` runs
// SET NX PX + an EVAL compare-and-delete (retried every 1 ms) instead, as a baseline in the same run.
// Usage: LIB=<checkout>/libs/distributed-lock/src node -r @swc-node/register bench/probes/redis-across-commits.ts <processes> <instances each> <ms> [ours|floor]
// Redis at PROBE_REDIS_URL (default LOCK_TEST_REDIS_URL). Output: bench/results/redis-across-commits-*.md.
import { fork } from 'node:child_process';
import { Redis } from 'ioredis';

const [processesArg = '4', instancesArg = '2', windowArg = '4000', mode = 'ours'] = process.argv.slice(2);
const url = process.env.PROBE_REDIS_URL ?? process.env.LOCK_TEST_REDIS_URL ?? 'redis://127.0.0.1:16379';

interface Contender {
  acquire(key: string): Promise<() => Promise<unknown>>;
  close(): Promise<unknown>;
}

/** The part of the library's public API the probe uses, as every checkout since the lean engine has it. */
interface LibraryShape {
  LockManager: new (strategy: unknown) => { close(): Promise<void> };
  LockService: new (manager: unknown) => { acquire(key: string, options: { waitTimeout: number }): Promise<{ release(): Promise<boolean> }> };
}

async function ours(): Promise<Contender> {
  const lib = (await import(process.env.LIB as string)) as LibraryShape;
  const { RedisLockStrategy } = (await import(`${process.env.LIB}/strategies/redis`)) as { RedisLockStrategy: new (options: { connection: string }) => unknown };
  const manager = new lib.LockManager(new RedisLockStrategy({ connection: url }));
  const locks = new lib.LockService(manager);
  return {
    async acquire(key) {
      const lock = await locks.acquire(key, { waitTimeout: 10_000 });
      return () => lock.release();
    },
    close: () => manager.close(),
  };
}

async function floor(): Promise<Contender> {
  const client = new Redis(url);
  return {
    async acquire(key) {
      const token = Math.random().toString(36).slice(2);
      while (!(await client.set(key, token, 'PX', 30_000, 'NX'))) await new Promise((resolve) => setTimeout(resolve, 1));
      return () => client.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0", 1, key, token);
    },
    close: () => client.quit(),
  };
}

async function child(): Promise<void> {
  const key = process.env.PROBE_KEY as string;
  const contenders = await Promise.all(Array.from({ length: Number(instancesArg) }, () => (mode === 'floor' ? floor() : ours())));
  process.send?.('ready');
  await new Promise((resolve) => process.once('message', resolve));
  const before = process.cpuUsage();
  const endAt = Date.now() + Number(windowArg);
  let sections = 0;
  await Promise.all(
    contenders.map(async (contender) => {
      while (Date.now() < endAt) {
        const release = await contender.acquire(key);
        sections += 1;
        await release();
      }
    }),
  );
  const used = process.cpuUsage(before);
  process.send?.({ sections, cpuMs: (used.user + used.system) / 1000 });
  await Promise.all(contenders.map((contender) => contender.close()));
  process.exit(0);
}

async function parent(): Promise<void> {
  const env = { ...process.env, PROBE_CHILD: '1', PROBE_KEY: `probe:${process.pid}:${Date.now()}` };
  const children = Array.from({ length: Number(processesArg) }, () => fork(__filename, process.argv.slice(2), { env, execArgv: process.execArgv }));
  await Promise.all(children.map((c) => new Promise((resolve) => c.once('message', resolve))));
  const reports = await Promise.all(
    children.map((c) => {
      c.send('go');
      return new Promise<{ sections: number; cpuMs: number }>((resolve) => c.once('message', (message) => resolve(message as { sections: number; cpuMs: number })));
    }),
  );
  const sections = reports.reduce((sum, r) => sum + r.sections, 0);
  const cpuMs = reports.reduce((sum, r) => sum + r.cpuMs, 0);
  const perProcess = reports.map((r) => r.sections);
  console.log(
    `${mode} ${processesArg} processes × ${instancesArg} instances: ${Math.round(sections / (Number(windowArg) / 1000))} sections/s, ` +
      `client CPU ${Math.round((cpuMs * 1000) / sections)} µs per section, sections per process ${Math.min(...perProcess)}–${Math.max(...perProcess)}`,
  );
}

void (process.env.PROBE_CHILD ? child() : parent());

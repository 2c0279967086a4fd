// Where the server time of the Redis permit scripts goes: the acquire script that joins a full
// semaphore's queue (the step every contended grant makes), cut short after each of its steps, and the
// uncontended acquire + release. Server time per call from INFO commandstats (EVALSHA's usec_per_call).
// Usage: PROBE_REDIS_URL=redis://127.0.0.1:6379 node -r @swc-node/register bench/probes/semaphore-script-cost.ts
// Use a private server: it resets the server's statistics and deletes the probe's keys.
import { PERMIT_ACQUIRE_SCRIPT, PERMIT_RELEASE_SCRIPT } from '@app/distributed-lock/strategies/redis/redis-semaphore.scripts';
import { Redis } from 'ioredis';

// No default: it resets the server's statistics and deletes keys, which a shared test server must not see.
const url = process.env.PROBE_REDIS_URL;
if (!url) throw new Error('set PROBE_REDIS_URL to a private Redis (e.g. redis-server --port 26399 --save "")');
const CALLS = 3_000;
const redis = new Redis(url);
const keys = ['{probe-sem}h', '{probe-sem}q', '{probe-sem}w', '{probe-sem}i'];
/** Acquire's arguments for a new owner each call: ttl 30 s, 4 permits, weight 1, as a waiter, claim 1.5 s. */
const joinArgs = (i: number): Array<string | number> => [`o${i}`, 30_000, 4, 1, '1', 1_500, 'probe-inbox'];

async function evalshaMicros(): Promise<number> {
  const stats = await redis.info('commandstats');
  return Number(/cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(stats)?.[1]);
}

/** Server µs per call of `source`, run CALLS times one after another with `args(i)`. */
async function perCall(source: string, args: (i: number) => Array<string | number>): Promise<number> {
  const sha = (await redis.script('LOAD', source)) as string;
  await redis.config('RESETSTAT');
  for (let i = 0; i < CALLS; i += 1) await redis.evalsha(sha, keys.length, ...keys, ...args(i));
  return evalshaMicros();
}

/** The acquire script up to `marker`, then `return 1`. */
function cutBefore(marker: string): string {
  const at = PERMIT_ACQUIRE_SCRIPT.source.indexOf(marker);
  if (at < 0) throw new Error(`no "${marker}" in the acquire script`);
  return `${PERMIT_ACQUIRE_SCRIPT.source.slice(0, at)}\nreturn 1\n`;
}

async function main(): Promise<void> {
  await redis.del(...keys);
  // Four holders with long leases: the semaphore is full, and every acquire below joins the queue.
  const acquire = (await redis.script('LOAD', PERMIT_ACQUIRE_SCRIPT.source)) as string;
  for (let i = 0; i < 4; i += 1) await redis.evalsha(acquire, keys.length, ...keys, `h${i}`, 30_000, 4, 1, '0', 1_500, 'probe-inbox');
  console.log(`${'empty script (return 1)'.padEnd(60)} ${(await perCall('return 1', () => [])).toFixed(2)} µs`);
  const steps: Array<[string, string]> = [
    ['prelude and arguments', 'local s = load('],
    ['+ load (TIME, HMGET)', 'if waiter and s.extra'],
    ['+ prune (ZRANGEBYSCORE)', 'local other ='],
    ['+ the head of the queue (ZRANGE)', 'if waiter then'],
  ];
  for (const [label, marker] of steps) console.log(`${`acquire cut: ${label}`.padEnd(60)} ${(await perCall(cutBefore(marker), joinArgs)).toFixed(2)} µs`);
  console.log(`${'acquire, whole: joins the queue (+ HINCRBY, ZADD, HSET, TTLs)'.padEnd(60)} ${(await perCall(PERMIT_ACQUIRE_SCRIPT.source, joinArgs)).toFixed(2)} µs`);
  await redis.del(...keys);
  const release = (await redis.script('LOAD', PERMIT_RELEASE_SCRIPT.source)) as string;
  await redis.config('RESETSTAT');
  for (let i = 0; i < CALLS; i += 1) {
    await redis.evalsha(acquire, keys.length, ...keys, `u${i}`, 30_000, 4, 1, '0', 1_500, 'probe-inbox');
    await redis.evalsha(release, keys.length, ...keys, `u${i}`, 'probe-inbox');
  }
  console.log(`${'uncontended acquire + release, per script'.padEnd(60)} ${(await evalshaMicros()).toFixed(2)} µs`);
  await redis.del(...keys);
  redis.disconnect();
}

void main();

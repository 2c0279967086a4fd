// What one run of a Redis lock script costs on the server, part by part, by the server's own clock (`INFO
// commandstats`, best of 3 batches of 10,000 pipelined EVALSHA): script fragments (the shared helpers, the clock,
// one command, the queue entry's parsing), then the barging retake as it runs under contention (a holder releases
// and takes the lock back while three waiters stay queued, their head within its window), with the time the
// commands inside the two scripts took.
// Usage: node -r @swc-node/register bench/probes/redis-script-parts.ts. Needs LOCK_TEST_REDIS_URL.
import { Redis } from 'ioredis';
import { LOCK_PRELUDE } from '../../libs/distributed-lock/src/strategies/redis/redis-lock.prelude';
import { ACQUIRE_SCRIPT, RELEASE_SCRIPT } from '../../libs/distributed-lock/src/strategies/redis/redis-lock.scripts';
import { SCRIPT_BASICS } from '../../libs/distributed-lock/src/strategies/redis/redis-script-basics';

const BATCH = 10_000;
const ENTRY = '30000:1796301769804:x:60000:1796301769804:inbox:lock:{k}:client-0123456789abcdef';

const FRAGMENTS: Record<string, string> = {
  'return 1': 'return 1',
  'basics, return 1': `${SCRIPT_BASICS}\nreturn 1`,
  'lock helpers, return 1': `${LOCK_PRELUDE}\nreturn 1`,
  'TIME': "redis.call('TIME') return 1",
  'EXISTS (1 key)': "redis.call('EXISTS', KEYS[1]) return 1",
  'HGET': "redis.call('HGET', KEYS[1], 'o') return 1",
  "string.format('%.0f')": "local s = string.format('%.0f', 1796301769804664) return 1",
  'lock helpers, parse_waiter': `${LOCK_PRELUDE}\nlocal w = parse_waiter('${ENTRY}', '') return 1`,
};

const INNER = ['exists', 'hget', 'hmget', 'zrange', 'time', 'get', 'set', 'hset', 'pexpire', 'hdel', 'zrem', 'publish'];

async function main(): Promise<void> {
  const redis = new Redis(process.env.LOCK_TEST_REDIS_URL as string);
  const evalshaStats = async (): Promise<{ calls: number; usec: number }> => {
    const match = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await redis.info('commandstats'));
    return { calls: Number(match?.[1]), usec: Number(match?.[2]) };
  };
  const best = async (run: () => Promise<void>): Promise<number> => {
    let fastest = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 3; round++) {
      await redis.config('RESETSTAT');
      await run();
      const { calls, usec } = await evalshaStats();
      fastest = Math.min(fastest, usec / calls);
    }
    return fastest;
  };
  for (const [name, source] of Object.entries(FRAGMENTS)) {
    const sha = (await redis.script('LOAD', source)) as string;
    const perCall = await best(async () => {
      const pipeline = redis.pipeline();
      for (let i = 0; i < BATCH; i++) pipeline.evalsha(sha, 1, 'parts:{k}');
      await pipeline.exec();
    });
    console.log(`${name.padEnd(28)} ${perCall.toFixed(2)} µs per EVALSHA`);
  }

  // The barging retake: a window far longer than the run, so the head stays within it and the holder takes the lock back each time.
  const acquire = (await redis.script('LOAD', ACQUIRE_SCRIPT.source)) as string;
  const release = (await redis.script('LOAD', RELEASE_SCRIPT.source)) as string;
  const base = `parts:{retake:${process.pid}}`;
  const keys = [base, `${base}:queue`, `${base}:waiters`, `${base}:fence`, `${base}:readers`];
  const take = (owner: string): [number, ...string[]] => [5, ...keys, owner, 'ch', '30000', '600000', '1', '600000', 'x', `inbox:${owner}`];
  const give = (owner: string): [number, ...string[]] => [5, ...keys, owner, 'ch', '0', '600000'];
  for (const owner of ['holder', 'w1', 'w2', 'w3']) await redis.evalsha(acquire, ...take(owner));
  let inner = '';
  const perCall = await best(async () => {
    const pipeline = redis.pipeline();
    for (let i = 0; i < BATCH / 2; i++) pipeline.evalsha(release, ...give('holder')).evalsha(acquire, ...take('holder'));
    const replies = await pipeline.exec();
    if (replies?.some(([error], i) => error || (i % 2 === 1 && (replies[i][1] as unknown[])[0] !== 1))) throw new Error('the holder did not take the lock back');
    const stats = await redis.info('commandstats');
    inner = INNER.map((command) => {
      const match = new RegExp(`cmdstat_${command}:calls=(\\d+),usec=(\\d+)`).exec(stats);
      return match ? `${command} ${(Number(match[1]) / BATCH).toFixed(2)}×` : '';
    })
      .filter(Boolean)
      .join(', ');
    const total = INNER.reduce((sum, command) => sum + Number(new RegExp(`cmdstat_${command}:calls=\\d+,usec=(\\d+)`).exec(stats)?.[1] ?? 0), 0);
    inner += `; their own time ${(total / BATCH).toFixed(2)} µs per script`;
  });
  console.log(`barging retake (release + acquire) ${perCall.toFixed(2)} µs per script; commands per script: ${inner}`);
  await redis.del(...keys);
  redis.disconnect();
}

void main();

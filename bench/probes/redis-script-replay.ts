// The Redis lock's acquire and release scripts alone on the server, pipelined, by the server's own clock
// (`INFO commandstats`): on a free lock (acquire + release by one owner), and on a contended key (three
// waiters in line in barging mode, a holder releasing and taking the lock back).
// Usage: node -r @swc-node/register bench/probes/redis-script-replay.ts [rounds]. Needs LOCK_TEST_REDIS_URL.
import { Redis } from 'ioredis';
import { ACQUIRE_SCRIPT, RELEASE_SCRIPT } from '../../libs/distributed-lock/src/strategies/redis/redis-lock.scripts';

const BARGE_MS = '5';
const PAIRS = 500;

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? '3');
  const redis = new Redis(process.env.LOCK_TEST_REDIS_URL as string);
  const acquire = (await redis.script('LOAD', ACQUIRE_SCRIPT.source)) as string;
  const release = (await redis.script('LOAD', RELEASE_SCRIPT.source)) as string;
  const keysOf = (base: string): string[] => [`replay:{${base}}`, `replay:{${base}}:queue`, `replay:{${base}}:waiters`, `replay:{${base}}:fence`, `replay:{${base}}:readers`];
  const perCall = async (): Promise<number> => Number(/cmdstat_evalsha:.*usec_per_call=([\d.]+)/.exec(await redis.info('commandstats'))?.[1]);
  const take = (keys: string[], owner: string, barge: string): [number, ...string[]] => [5, ...keys, owner, 'ch', '30000', barge, '1', '60000', 'x', `inbox:${owner}`];
  const give = (keys: string[], owner: string, barge: string): [number, ...string[]] => [5, ...keys, owner, 'ch', '0', barge];

  for (let round = 1; round <= rounds; round++) {
    const free = keysOf(`free:${process.pid}:${round}`);
    await redis.config('RESETSTAT');
    const pipeline = redis.pipeline();
    for (let i = 0; i < PAIRS * 10; i++) {
      pipeline.evalsha(acquire, ...take(free, `owner-${i}`, '0'));
      pipeline.evalsha(release, ...give(free, `owner-${i}`, '0'));
    }
    await pipeline.exec();
    const alone = await perCall();

    const busy = keysOf(`busy:${process.pid}:${round}`);
    await redis.evalsha(acquire, ...take(busy, 'holder', BARGE_MS));
    for (const waiter of ['w1', 'w2', 'w3']) await redis.evalsha(acquire, ...take(busy, waiter, BARGE_MS));
    await redis.config('RESETSTAT');
    for (let batch = 0; batch < 10; batch++) {
      const replay = redis.pipeline();
      for (let i = 0; i < PAIRS; i++) {
        replay.evalsha(release, ...give(busy, 'holder', BARGE_MS));
        replay.evalsha(acquire, ...take(busy, 'holder', BARGE_MS));
      }
      await replay.exec();
      // The waiters refresh their places, as live ones do.
      for (const waiter of ['w1', 'w2', 'w3']) await redis.evalsha(acquire, ...take(busy, waiter, BARGE_MS));
    }
    const contended = await perCall();
    console.log(`round ${round}: EVALSHA µs per call (server's clock): free lock ${alone}, contended key ${contended}`);
    await redis.del(...free, ...busy);
  }
  redis.disconnect();
}

void main();

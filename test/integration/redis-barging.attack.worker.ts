// One application process hammering one barging Redis lock (see redis-barging.attack.int.spec.ts).
// Usage: redis-barging.attack.worker <key> <instances> <runMs> <fair|barging> <sharedEvery>
// Each instance (its own strategy, its own connections) loops acquire → section → release until runMs
// passed; every `sharedEvery`-th acquisition is a reader (0: none). Inside each section the holder checks,
// in one Redis script, that nobody conflicting is inside and that its fencing token is above every token
// seen before it (see CHECK). Prints one JSON line: sections, violations, timeouts, the longest wait.
import { Redis } from 'ioredis';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { LockManager, LockService } from '../support/without-nest';

// KEYS: writers inside, readers inside, largest token seen, last writer's token. ARGV: mode, token, +1/-1.
// Enter: a writer must find nobody inside and a token above every token seen; a reader no writer inside and
// a token above the last writer's. Returns 1 when the section is consistent, 0 for a violation.
const CHECK = `
local mode, token, dir = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if dir < 0 then
  redis.call('DECR', mode == 'x' and KEYS[1] or KEYS[2])
  return 1
end
local ok = 1
local w, r = tonumber(redis.call('GET', KEYS[1]) or '0'), tonumber(redis.call('GET', KEYS[2]) or '0')
local maxAll, lastW = tonumber(redis.call('GET', KEYS[3]) or '0'), tonumber(redis.call('GET', KEYS[4]) or '0')
if mode == 'x' then
  if w ~= 0 or r ~= 0 or token <= maxAll then ok = 0 end
  redis.call('INCR', KEYS[1])
  redis.call('SET', KEYS[4], ARGV[2])
else
  if w ~= 0 or token <= lastW then ok = 0 end
  redis.call('INCR', KEYS[2])
end
if token > maxAll then redis.call('SET', KEYS[3], ARGV[2]) end
for _, k in ipairs(KEYS) do redis.call('PEXPIRE', k, 60000) end
return ok
`;

/** `wait <key>`: one barging instance (window ATTACK_BARGE_MS; fair with ATTACK_FAIR=1) acquires `key` once, says "held", holds until killed. */
async function waitOnce(key: string, url: string, recheckInterval: number): Promise<void> {
  const fair = process.env.ATTACK_FAIR === '1';
  const manager = new LockManager(
    new RedisLockStrategy(fair ? { connection: url, recheckInterval } : { connection: url, fair: false, recheckInterval, bargeWindowMs: Number(process.env.ATTACK_BARGE_MS ?? '5') }),
  );
  process.stdout.write('acquiring\n');
  const lock = await new LockService(manager).acquire(key, { ttl: 10_000, waitTimeout: 15_000 });
  process.stdout.write(`held ${lock.fencingToken}\n`);
  await new Promise((done) => setTimeout(done, 20_000));
}

async function main(): Promise<void> {
  const url = process.env.LOCK_TEST_REDIS_URL as string;
  const recheckInterval = Number(process.env.ATTACK_RECHECK_MS ?? '3000');
  if (process.argv[2] === 'wait') return waitOnce(process.argv[3], url, recheckInterval);
  const [key, instancesText, runMsText, fairText, sharedEveryText] = process.argv.slice(2);
  const admin = new Redis(url);
  const checkKeys = [`attack:${key}:w`, `attack:${key}:r`, `attack:${key}:max`, `attack:${key}:lastw`];
  const managers = Array.from({ length: Number(instancesText) }, () =>
    new LockManager(new RedisLockStrategy({ connection: url, fair: fairText === 'fair', recheckInterval })),
  );
  const sharedEvery = Number(sharedEveryText);
  const until = Date.now() + Number(runMsText);
  const stats = { sections: 0, violations: 0, timeouts: 0, maxWaitMs: 0, slowWaits: 0 };
  await Promise.all(
    managers.map(async (manager, index) => {
      const locks = new LockService(manager);
      for (let n = 0; Date.now() < until; n += 1) {
        const mode = sharedEvery > 0 && (n + index) % sharedEvery === 0 ? 'shared' : 'exclusive';
        const started = Date.now();
        const lock = await locks.tryAcquire(key, { mode, ttl: 10_000 }).then((held) => held ?? locks.acquire(key, { mode, ttl: 10_000, waitTimeout: 8_000 }).catch(() => null));
        const waited = Date.now() - started;
        stats.maxWaitMs = Math.max(stats.maxWaitMs, waited);
        // Past 2 s of the 3 s re-check: a wait that only its re-check ended (a wake that never came), with a
        // margin for a loaded machine (the longest wait measured was 121 ms).
        if (waited > 2_000) stats.slowWaits += 1;
        if (!lock) {
          stats.timeouts += 1;
          continue;
        }
        const m = mode === 'shared' ? 's' : 'x';
        const ok = await admin.eval(CHECK, 4, ...checkKeys, m, String(lock.fencingToken), '1');
        if (ok !== 1) stats.violations += 1;
        if (n % 3 === 0) await new Promise((done) => setTimeout(done, 1));
        await admin.eval(CHECK, 4, ...checkKeys, m, String(lock.fencingToken), '-1');
        await lock.release();
        stats.sections += 1;
      }
    }),
  );
  process.stdout.write(`${JSON.stringify(stats)}\n`);
  await Promise.all(managers.map((manager) => manager.close()));
  admin.disconnect();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exit(1);
  },
);

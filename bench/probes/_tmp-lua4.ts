import Redis from 'ioredis';
import { ACQUIRE_SCRIPT, RELEASE_SCRIPT } from '../../libs/distributed-lock/src/strategies/redis/redis-lock.scripts';
import { SCRIPT_BASICS } from '../../libs/distributed-lock/src/strategies/redis/redis-script-basics';
const minimal = `
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[5]) == 0 then
  local last = tonumber(redis.call('GET', KEYS[4]) or '0')
  local t = redis.call('TIME')
  local token = tonumber(t[1]) * 1000000 + tonumber(t[2])
  if token <= last then token = last + 1 end
  local text = string.format('%.0f', token)
  redis.call('SET', KEYS[4], text, 'PX', 604800000)
  redis.call('HSET', KEYS[1], 'o', ARGV[1], 'c', 1, 't', text, 'g', text .. ':' .. math.floor(token/1000))
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {1, text}
end
return {0, 0}`;
const minimalRelease = `
local holder = redis.call('HMGET', KEYS[1], 'o', 'c')
if holder[1] == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'o', 'c', 't', 'g')
  if redis.call('ZRANGE', KEYS[2], 0, 0)[1] then return 2 end
  return 1
end
return 0`;
async function main() {
  const r = new Redis(process.env.LOCK_TEST_REDIS_URL as string);
  const ks = (i: number) => [`l{k${i}}`, `q{k${i}}`, `w{k${i}}`, `f{k${i}}`, `r{k${i}}`];
  const variants: Array<[string, string, string]> = [
    ['ours', (ACQUIRE_SCRIPT as unknown as { source: string }).source, (RELEASE_SCRIPT as unknown as { source: string }).source],
    ['minimal', minimal, minimalRelease],
    ['minimal+basics', SCRIPT_BASICS + minimal, SCRIPT_BASICS + minimalRelease],
  ];
  const stat = async () => Number((await r.info('commandstats')).split('\n').find((l) => l.startsWith('cmdstat_evalsha'))?.match(/usec_per_call=([\d.]+)/)?.[1]);
  for (let rep = 0; rep < 3; rep++) {
    for (const [name, acq, rel] of variants) {
      const a = (await r.script('LOAD', acq)) as string;
      const b = (await r.script('LOAD', rel)) as string;
      await r.config('RESETSTAT');
      for (let round = 0; round < 20; round++) {
        const p = r.pipeline();
        for (let i = 0; i < 1000; i++) {
          p.evalsha(a, 5, ...ks(0), 'owner' + i, 'ch', '30000', '0', '0', '1500', 'x', '');
          p.evalsha(b, 5, ...ks(0), 'owner' + i, 'ch', '0', '0');
        }
        await p.exec();
      }
      console.log(name, 'evalsha µs/call', await stat());
    }
  }
  r.disconnect();
}
void main();

// A memcached that stops while a grant is on its way: does a contender get the lock before the holder's lease
// (as the holder's lock service counts it, from when it sent the grant) has ended?
// Usage: PAUSES=1000,1500,2000 ROUNDS=8 [TTL=1000] node -r @swc-node/register bench/probes/memcached-pause.ts
// Starts its own memcached on a free port and stops it (SIGSTOP) for each pause; the holder asks for the lock in
// the pause's last 50–300 ms, and a second lock service polls the key with tryAcquire until the holder's lease ends.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { LockManager, LockService, type LockHandle } from '@app/distributed-lock';
import { MemcachedLockStrategy } from '@app/distributed-lock/strategies/memcached';
import { freePort } from '../../test/support/free-port';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const PAUSES = (process.env.PAUSES ?? '1000,1500,2000').split(',').map(Number);
const ROUNDS = Number(process.env.ROUNDS ?? 8);
const TTL = Number(process.env.TTL ?? 1_000);
const run = randomUUID().slice(0, 6);

async function main(): Promise<void> {
  const port = await freePort();
  const memcached = spawn('memcached', ['-p', String(port), '-U', '0', '-l', '127.0.0.1', '-u', 'root'], { stdio: 'ignore' });
  const pid = memcached.pid as number;
  await sleep(300);
  const service = (): LockService => new LockService(new LockManager(new MemcachedLockStrategy({ connection: `127.0.0.1:${port}` }), { operationTimeout: 5_000 }));
  const [holder, contender] = [service(), service()];
  try {
    for (const pause of PAUSES) {
      let rounds = 0;
      let early = 0;
      let worstMs = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const key = `pause:${run}:${pause}:${round}`;
        await sleep(Math.random() * 1_000);
        process.kill(pid, 'SIGSTOP');
        const stoppedAt = Date.now();
        await sleep(pause - 300 + Math.random() * 250);
        const asked = holder.acquire(key, { ttl: TTL });
        await sleep(Math.max(0, stoppedAt + pause - Date.now()));
        process.kill(pid, 'SIGCONT');
        let held: LockHandle;
        try {
          held = await asked;
        } catch (error) {
          console.log(`pause ${pause} round ${round}: the holder's acquire failed (${(error as Error).name})`);
          continue;
        }
        rounds += 1;
        let toldAt = 0;
        held.signal.addEventListener('abort', () => (toldAt = Date.now()));
        let grantedAt = 0;
        while (Date.now() < held.expiresAt + 50) {
          const taken = await contender.tryAcquire(key, { ttl: 1_000, autoExtend: false });
          if (taken) {
            grantedAt = Date.now();
            await taken.release();
            break;
          }
          await sleep(5);
        }
        if (grantedAt && grantedAt < held.expiresAt && !(toldAt && toldAt <= grantedAt)) {
          early += 1;
          worstMs = Math.max(worstMs, held.expiresAt - grantedAt);
        }
        await sleep(400);
        await held.release().catch(() => undefined);
      }
      console.log(`pause ${pause} ms, ttl ${TTL} ms: the contender got the lock before the holder's lease ended in ${early} of ${rounds} rounds (at most ${worstMs} ms early)`);
    }
  } finally {
    process.kill(pid, 'SIGCONT');
    memcached.kill('SIGKILL');
  }
  process.exit(0);
}

void main();

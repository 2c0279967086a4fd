import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { LockManager, LockService, type Lock } from '@app/distributed-lock';
import { redisLockKeys, redisSemaphoreKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { Redis } from 'ioredis';
import { subjectNamed } from '../contract/subjects';
import { HeldBackProxy } from '../support/held-back-proxy';
import { workerArgs } from '../support/worker-bundles';

const ROOT = resolve(__dirname, '..', '..');
const WORKER = join(ROOT, 'test', 'support', 'late-hand-over.worker.ts');
const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(10);
  }
}

/**
 * A fair Redis waiter (lock or permit) is frozen with SIGSTOP while a release hands it the place, for
 * longer than the hand-over's claim (3 × recheckInterval = 1.5 s). The claim runs out, another client
 * takes the place. Woken, the waiter checks on the server, which finds the claim gone and queues it again;
 * only then does the hand-over message reach it (pub/sub messages come on a connection of their own, in no
 * order with the replies of the other: here a proxy holds the message back until the check is answered).
 * The waiter must not take that lapsed hand-over for a grant: with its lease counted from the check, it
 * believed it held a place the server had given to the other client (issue 42, item 9: five places in use
 * at N = 3, tokens 5 s older than the newest, one loss never reported).
 */
describe('A fair Redis waiter frozen past its hand-over, told of it only after its first check on waking', () => {
  const url = new URL(process.env.LOCK_TEST_REDIS_URL ?? 'redis://127.0.0.1:16379');
  const cases: Array<{ kind: 'permit' | 'lock'; queueKey: (key: string) => string }> = [
    { kind: 'permit', queueKey: (key) => redisSemaphoreKeys('dlock:', key).keys[1] },
    { kind: 'lock', queueKey: (key) => redisLockKeys('dlock:', key).keys[1] },
  ];
  for (const { kind, queueKey } of cases) {
    it(`${kind}: keeps waiting while the other client holds, and gets the place once it is freed`, async () => {
      const key = `fault:${run}:late-hand-over:${kind}`;
      const proxy = new HeldBackProxy({ host: url.hostname, port: Number(url.port) });
      const port = await proxy.start();
      const admin = new Redis(url.toString());
      const manager = new LockManager(await subjectNamed('redis (fair)').create());
      const locks = new LockService(manager);
      const take = (waitTimeout: number): Promise<Lock> =>
        kind === 'permit' ? locks.acquirePermit(key, { permits: 1, ttl: 10_000, autoExtend: true, waitTimeout }) : locks.acquire(key, { ttl: 10_000, autoExtend: true, waitTimeout });
      const queued = async (): Promise<boolean> => (await admin.zcard(queueKey(key))) === 1;
      const first = await take(1_000);
      const child = spawn(process.execPath, [...workerArgs(WORKER), kind, key, '2000', String(port)], { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
      const lines: string[] = [];
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<void>((done) => child.on('exit', () => done()));
      let other: Lock | undefined;
      try {
        // In line (and subscribed: a waiter joins the queue once its inbox is confirmed).
        await until('the waiter in line', queued, 30_000).catch((error: Error) => {
          throw new Error(`${error.message}; it printed: ${lines.join(' | ')}; stderr: ${stderr.slice(-800)}`);
        });
        process.kill(child.pid as number, 'SIGSTOP');
        proxy.holdBack();
        expect(await first.release()).toBe(true); // handed to the frozen waiter, for its claim
        await sleep(2_000); // past the claim
        other = await take(5_000);
        process.kill(child.pid as number, 'SIGCONT');
        // Its first check after waking found the claim gone and queued it again; now the message arrives.
        await until('the woken waiter in line again', queued, 5_000);
        proxy.letThrough();
        await sleep(1_500);
        expect(other.isHeld).toBe(true);
        expect(lines.filter((line) => line.startsWith('held')), `the waiter took the lapsed hand-over while token ${other.fencingToken} held the only place`).toEqual([]);
        const otherToken = other.fencingToken as number;
        expect(await other.release()).toBe(true);
        await until('the waiter holding once the place is free', async () => lines.some((line) => line.startsWith('held')), 5_000);
        const token = Number(lines.find((line) => line.startsWith('held'))?.split(' ')[1]);
        expect(token).toBeGreaterThan(otherToken);
      } finally {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
        await exited;
        await other?.release().catch(() => false);
        await manager.close();
        admin.disconnect();
        await proxy.close();
      }
    }, 60_000);
  }
});

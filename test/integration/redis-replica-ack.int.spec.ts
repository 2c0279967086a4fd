import { randomUUID } from 'node:crypto';
import { InvalidLockOptionsError, LockBackendUnavailableError, LockManager, LockNotReplicatedError, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys, redisSemaphoreKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { Redis } from 'ioredis';
import { waitUntil } from '../../scripts/services/probes';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis';
import { replicasConfirmWrites } from '../support/redis-fencing';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const lockKeyOf = (key: string): string => redisLockKeys('dlock:', key).keys[0];
/** The sorted set of a semaphore's holders: owner -> server time (ms) its lease ends. */
const holdersOf = (key: string): string => redisSemaphoreKeys('dlock:', key).keys[0];

/** How many times the server ran a command (INFO commandstats), e.g. "evalsha". */
async function callsOf(client: Redis, command: string): Promise<number> {
  const stats = await client.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
}

/** A plain client for inspection, quiet when its server goes away. */
function inspector(url: string): Redis {
  const client = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => undefined);
  return client;
}

/**
 * `replicaAck`: the Redis strategy waits (WAIT, in the script's round trip) until replicas have a lock's
 * write. On a private master and replica, so that the replica can be frozen; and on a private server that
 * refuses WAIT, as managed services that disable it do.
 */
describe('Redis strategy with replica acknowledgement', () => {
  let master: PrivateRedis;
  let replica: PrivateRedis;
  let onMaster: Redis;
  let onReplica: Redis;
  const managers: LockManager[] = [];

  const locksOn = (options: ConstructorParameters<typeof RedisLockStrategy>[0]): LockService => {
    const manager = new LockManager(new RedisLockStrategy(options), { operationTimeout: 3_000 });
    managers.push(manager);
    return new LockService(manager);
  };

  beforeAll(async () => {
    master = await startPrivateRedis();
    replica = await startPrivateRedis(['--replicaof', '127.0.0.1', String(master.port)]);
    onMaster = inspector(master.url);
    onReplica = inspector(replica.url);
    await waitUntil('the replica to sync', async () => /master_link_status:up/.test(await onReplica.info('replication')), 10_000, 50);
    // The replica's first acknowledgement comes up to a second after the sync. WAIT counts replicas that
    // have this connection's last write, so a WAIT without a write of its own says nothing: write, then wait.
    await replicasConfirmWrites(onMaster, 1);
  }, 30_000);

  afterAll(async () => {
    await Promise.all(managers.map((manager) => manager.close().catch(() => undefined)));
    onMaster?.disconnect();
    onReplica?.disconnect();
    await replica?.stop();
    await master?.stop();
  }, 30_000);

  it('refuses bad options when the strategy is made', () => {
    for (const replicaAck of [{ replicas: 0 }, { replicas: 1.5 }, { replicas: '1' }, { replicas: 1, timeoutMs: 0 }, { replicas: 1, timeoutMs: 120_000 }, { replicas: 1, wait: 5 }, null]) {
      expect(() => new RedisLockStrategy({ connection: master.url, replicaAck: replicaAck as never })).toThrow(InvalidLockOptionsError);
    }
  });

  it('gives a lock only once the replica has it, and keeps it there through extensions and hand-overs', async () => {
    const key = `ack:${run}:granted`;
    const first = locksOn({ connection: master.url, replicaAck: { replicas: 1 } });
    const second = locksOn({ connection: master.url, replicaAck: { replicas: 1, timeoutMs: 1_000 } });
    const lock = await first.acquire(key);
    // Read on the replica at once: WAIT answered after the replica acknowledged the grant.
    expect(await onReplica.hget(lockKeyOf(key), 't')).toBe(String(lock.fencingToken));
    await lock.extend(60_000);
    expect(await onReplica.pttl(lockKeyOf(key))).toBeGreaterThan(50_000);
    // A fair hand-over: the waiter confirms its claim on the replica before it counts as held.
    const waiting = second.acquire(key, { waitTimeout: 5_000 });
    await sleep(100);
    await lock.release();
    const next = await waiting;
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken as number);
    expect(await onReplica.hget(lockKeyOf(key), 't')).toBe(String(next.fencingToken));
    // The claim was turned into the whole lease, confirmed too.
    expect(await onReplica.pttl(lockKeyOf(key))).toBeGreaterThan(20_000);
    await next.release();
  });

  it('gives the lock back and fails with LockNotReplicatedError when the replica does not confirm in time', async () => {
    const key = `ack:${run}:frozen`;
    const acked = locksOn({ connection: master.url, replicaAck: { replicas: 1, timeoutMs: 200 } });
    const plain = locksOn({ connection: master.url });
    const held = await acked.acquire(`${key}:held`);
    const holderOfWaited = await plain.acquire(`${key}:handed`);
    const handedOver = acked.acquire(`${key}:handed`, { waitTimeout: 5_000 }).catch((error: unknown) => error);
    await sleep(100);
    replica.freeze();
    try {
      const started = Date.now();
      const error = await acked.acquire(key).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockNotReplicatedError);
      expect(error).toMatchObject({ key, operation: 'acquire', reason: 'too-few-replicas', replicas: 1, acknowledged: 0, timeoutMs: 200 });
      expect(Date.now() - started).toBeGreaterThanOrEqual(190);
      // Given back: nobody holds it on the master.
      expect(await onMaster.exists(lockKeyOf(key))).toBe(0);
      // An extension the replica does not confirm fails too; the lease stays where it was confirmed.
      const until = held.expiresAt;
      await expect(held.extend(60_000)).rejects.toBeInstanceOf(LockNotReplicatedError);
      expect(held.expiresAt).toBe(until);
      // A hand-over the replica does not confirm is given back as well.
      await holderOfWaited.release();
      expect(await handedOver).toMatchObject({ key: `${key}:handed`, reason: 'too-few-replicas' });
      expect(await onMaster.exists(lockKeyOf(`${key}:handed`))).toBe(0);
    } finally {
      replica.thaw();
    }
    await replicasConfirmWrites(onMaster, 1);
    const again = await acked.acquire(key);
    await again.release();
    await held.release();
  }, 20_000);

  it('gives a permit only once the replica has it, and keeps it there through extensions and hand-overs', async () => {
    const key = `ack:${run}:permit`;
    const first = locksOn({ connection: master.url, replicaAck: { replicas: 1 } });
    const second = locksOn({ connection: master.url, replicaAck: { replicas: 1, timeoutMs: 1_000 } });
    const permit = await first.acquirePermit(key, { permits: 1 });
    // Read on the replica at once: WAIT answered after the replica acknowledged the grant.
    expect(await onReplica.zscore(holdersOf(key), permit.owner)).not.toBeNull();
    await permit.extend(60_000);
    expect(Number(await onReplica.zscore(holdersOf(key), permit.owner))).toBeGreaterThan(Date.now() + 50_000);
    // A hand-over: the waiter's place counts once the replica has its whole lease.
    const waiting = second.acquirePermit(key, { permits: 1, waitTimeout: 5_000 });
    await sleep(100);
    await permit.release();
    const next = await waiting;
    expect(next.fencingToken).toBeGreaterThan(permit.fencingToken as number);
    expect(Number(await onReplica.zscore(holdersOf(key), next.owner))).toBeGreaterThan(Date.now() + 20_000);
    await next.release();
  });

  it('gives the permit back and fails with LockNotReplicatedError when the replica does not confirm in time', async () => {
    const key = `ack:${run}:permit-frozen`;
    const acked = locksOn({ connection: master.url, replicaAck: { replicas: 1, timeoutMs: 200 } });
    const plain = locksOn({ connection: master.url });
    const held = await acked.acquirePermit(`${key}:held`, { permits: 2 });
    const holderOfWaited = await plain.acquirePermit(`${key}:handed`, { permits: 1 });
    const handedOver = acked.acquirePermit(`${key}:handed`, { permits: 1, waitTimeout: 5_000 }).catch((error: unknown) => error);
    await sleep(100);
    replica.freeze();
    try {
      const error = await acked.acquirePermit(key, { permits: 2 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockNotReplicatedError);
      expect(error).toMatchObject({ key, operation: 'acquire', reason: 'too-few-replicas', replicas: 1, acknowledged: 0, timeoutMs: 200 });
      // Given back: no holder entry on the master.
      expect(await onMaster.zcard(holdersOf(key))).toBe(0);
      // The same through withPermit: the function never runs.
      let ran = false;
      const viaWith = await acked.withPermit(key, () => (ran = true), { permits: 2 }).catch((e: unknown) => e);
      expect(viaWith).toBeInstanceOf(LockNotReplicatedError);
      expect(ran).toBe(false);
      // An extension the replica does not confirm fails; the lease stays where it was confirmed.
      const until = held.expiresAt;
      await expect(held.extend(60_000)).rejects.toBeInstanceOf(LockNotReplicatedError);
      expect(held.expiresAt).toBe(until);
      // A hand-over the replica does not confirm is given back as well.
      await holderOfWaited.release();
      expect(await handedOver).toMatchObject({ key: `${key}:handed`, reason: 'too-few-replicas' });
      expect(await onMaster.zcard(holdersOf(`${key}:handed`))).toBe(0);
    } finally {
      replica.thaw();
    }
    await replicasConfirmWrites(onMaster, 1);
    const again = await acked.acquirePermit(key, { permits: 2 });
    await again.release();
    await held.release();
  }, 20_000);

  it('a connection dropped during a pending WAIT fails that call alone, gives its grant back, and the next one is granted', async () => {
    const key = `ack:${run}:dropped`;
    const acked = locksOn({ connection: master.url, replicaAck: { replicas: 1, timeoutMs: 2_000 } });
    // Connected before the replica stops answering: the kill below drops a connection that served.
    await (await acked.acquire(`${key}:warm`)).release();
    replica.freeze();
    let error: unknown;
    try {
      const pending = acked.acquire(key).catch((e: unknown) => e);
      await waitUntil('the WAIT behind the grant to be pending', async () => /cmd=wait\b/.test(String(await onMaster.call('CLIENT', 'LIST'))), 2_000, 10);
      // ioredis fails the pending WAIT with "Command aborted due to connection close": no answer of the server's.
      await onMaster.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      error = await pending;
    } finally {
      replica.thaw();
    }
    expect(error).toBeInstanceOf(LockBackendUnavailableError);
    expect(error).not.toBeInstanceOf(LockNotReplicatedError);
    await waitUntil('the grant to be given back', async () => (await onMaster.exists(lockKeyOf(key))) === 0, 3_000, 20);
    await replicasConfirmWrites(onMaster, 1);
    // The server never refused WAIT: the same strategy goes on granting.
    const again = await acked.acquire(key, { waitTimeout: 3_000 });
    expect(await onReplica.hget(lockKeyOf(key), 't')).toBe(String(again.fencingToken));
    await again.release();
    const permit = await acked.acquirePermit(key, { permits: 1, waitTimeout: 3_000 });
    await permit.release();
  }, 20_000);

  // Managed services take WAIT away by renaming it (the command is unknown) or by ACL (not permitted).
  const refusals = [
    { server: 'WAIT renamed away', args: ['--rename-command', 'WAIT', ''], answer: /unknown command/ },
    { server: 'WAIT denied by ACL', args: ['--user', 'default', 'on', 'nopass', '~*', '&*', '+@all', '-wait'], answer: /NOPERM/ },
  ];
  for (const refusal of refusals) {
    it(`refuses at the first use, and at once afterwards, on a server without WAIT (${refusal.server})`, async () => {
      const managed = await startPrivateRedis(refusal.args);
      const raw = inspector(managed.url);
      try {
        const locks = locksOn({ connection: managed.url, replicaAck: { replicas: 1 } });
        const key = `ack:${run}:no-wait`;
        const error = await locks.acquire(key).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LockNotReplicatedError);
        expect(error).toMatchObject({ key, reason: 'wait-unsupported', acknowledged: undefined });
        expect((error as Error).message).toMatch(/refused WAIT.*managed services.*Remove `replicaAck`/s);
        expect((error as Error).message).toMatch(refusal.answer);
        expect(await raw.exists(lockKeyOf(key))).toBe(0);
        // Known now: the next acquisition fails before it reaches the server.
        const scriptsRun = await callsOf(raw, 'evalsha');
        await expect(locks.tryAcquire(`${key}:2`)).rejects.toMatchObject({ reason: 'wait-unsupported' });
        expect(await callsOf(raw, 'evalsha')).toBe(scriptsRun);
        // Without replicaAck the same server serves locks as before.
        const plain = await locksOn({ connection: managed.url }).acquire(key);
        await plain.release();
      } finally {
        raw.disconnect();
        await managed.stop();
      }
    });
  }
});

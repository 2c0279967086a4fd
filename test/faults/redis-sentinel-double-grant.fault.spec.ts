import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { LockLostError, LockManager, LockNotReplicatedError, LockService, type Lock } from '@app/distributed-lock';
import { RedisLockStrategy, type RedisReplicaAckOptions } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { ensureDebianPackages, faults, packagesFor, startTopology, stopTopology } from '../../scripts/services';
import { FencedResource } from '../support/fenced-resource';
import { waitUntil } from '../../scripts/services/probes';
import { adminClient, healthyReplicas, promotedReplica, replicasConfirmWrites, roleOf, sentinelMasterPort } from '../support/redis-fencing';

const run = randomUUID().slice(0, 8);
const TOPOLOGY = 'redis-sentinel2';
const MASTER = `${TOPOLOGY}-master`;
const REPLICAS = [`${TOPOLOGY}-replica`, `${TOPOLOGY}-replica-2`];
/** The holder's lease: its watchdog extends it a third of the way, and learns there that the lock is gone. */
const TTL_MS = 5_000;

/** Where the measured windows go, one JSON line per case, when LOCK_DOUBLE_GRANT_REPORT names a file. */
function report(entry: Record<string, unknown>): void {
  process.stdout.write(`sentinel double grant: ${JSON.stringify(entry)}\n`);
  const file = process.env.LOCK_DOUBLE_GRANT_REPORT;
  if (file) appendFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), ...entry })}\n`);
}

/** Resolves once Sentinel's failover of `masterName` has ended: it announced the switch (+switch-master) to every client. */
async function failoverEnded(sentinel: Redis, masterName: string): Promise<void> {
  await waitUntil(
    'Sentinel to end the failover',
    async () => {
      const fields = ((await sentinel.call('SENTINEL', 'MASTER', masterName)) as unknown[]).map(String);
      return !fields[fields.indexOf('flags') + 1].includes('failover_in_progress');
    },
    15_000,
    50,
  );
}

/** Resolves once a pending WAIT shows in the client list of the server on `port`. */
async function waitPendingOn(port: number): Promise<void> {
  const server = adminClient(port);
  try {
    await waitUntil('a WAIT to be pending', async () => /cmd=wait\b/.test(String(await server.call('CLIENT', 'LIST'))), 3_000, 10);
  } finally {
    server.disconnect();
  }
}

/** When its holder learns that the lock is lost (its signal aborts). */
function lossOf(lock: Lock): Promise<number> {
  return new Promise((resolve) => {
    if (lock.signal.aborted) resolve(performance.now());
    else lock.signal.addEventListener('abort', () => resolve(performance.now()), { once: true });
  });
}

/**
 * Two holders of one lock across a Sentinel failover, made to happen for sure: both replicas are frozen and
 * cut off, so the master's grant never reaches them, and the master is then SIGKILLed. The promoted replica
 * has no lock, and a second process gets it while the first still holds it, until the first's watchdog
 * finds it gone. The fencing token (above every earlier one, see redis-fencing) makes the resource refuse
 * the first holder's late write. With `replicaAck` the first grant is refused instead, and a lock the
 * replicas did confirm survives the failover: the second process waits for it.
 */
describe('Two holders across a Sentinel failover, and replicaAck', () => {
  let sentinel: Redis;
  let masterName: string;
  let sentinelUrl: URL;
  const managers: LockManager[] = [];
  const resource = new FencedResource();

  const locksOn = (replicaAck?: RedisReplicaAckOptions): LockService => {
    const connection = { sentinels: [{ host: sentinelUrl.hostname, port: Number(sentinelUrl.port) }], name: masterName };
    const manager = new LockManager(new RedisLockStrategy({ connection, replicaAck }), { operationTimeout: 3_000 });
    managers.push(manager);
    return new LockService(manager);
  };

  beforeAll(() => {
    ensureDebianPackages(packagesFor([TOPOLOGY]), (line) => process.stdout.write(`${line}\n`));
  }, 120_000);

  beforeEach(async () => {
    // A fresh master, replicas and Sentinel: each case kills the master.
    await stopTopology(TOPOLOGY);
    sentinelUrl = new URL((await startTopology(TOPOLOGY)).value);
    masterName = sentinelUrl.pathname.slice(1);
    sentinel = adminClient(Number(sentinelUrl.port));
    await healthyReplicas(sentinel, masterName, REPLICAS.length);
    const master = adminClient((await sentinelMasterPort(sentinel, masterName)) as number);
    await replicasConfirmWrites(master, 2);
    master.disconnect();
  }, 60_000);

  afterEach(async () => {
    await Promise.all(managers.splice(0).map((manager) => manager.close().catch(() => undefined)));
    sentinel?.disconnect();
    for (const replica of REPLICAS) {
      try {
        faults.resume(replica);
      } catch {
        // not frozen, or gone
      }
    }
  }, 30_000);

  afterAll(async () => {
    await resource.close();
    await stopTopology(TOPOLOGY);
  }, 60_000);

  /**
   * Kills the master, wakes the replicas (which cannot catch up from a dead master), and resolves once
   * Sentinel names one of them as the master and it says so itself.
   */
  async function failover(): Promise<void> {
    const oldPort = (await sentinelMasterPort(sentinel, masterName)) as number;
    await faults.kill(MASTER);
    for (const replica of REPLICAS) expect(faults.resume(replica)).toBe(true);
    await promotedReplica(sentinel, masterName, oldPort);
  }

  /** Freezes both replicas and has the master drop their links: nothing written now reaches them. */
  async function cutReplicas(): Promise<void> {
    for (const replica of REPLICAS) expect(faults.pause(replica)).toBe(true);
    const master = adminClient((await sentinelMasterPort(sentinel, masterName)) as number);
    try {
      expect(await master.call('CLIENT', 'KILL', 'TYPE', 'replica')).toBe(2);
    } finally {
      master.disconnect();
    }
  }

  it('without replicaAck: a grant the replicas missed is lost, two hold at once, and the fencing token refuses the first one\'s late write', async () => {
    const key = `dg:${run}:async`;
    await resource.reset(key);
    await cutReplicas();
    // Granted on the master only.
    const holder = await locksOn().acquire(key, { ttl: TTL_MS });
    const holderLost = lossOf(holder);
    await failover();
    const second = await locksOn().acquire(key, { ttl: TTL_MS, waitTimeout: 20_000 });
    const secondAt = performance.now();
    const bothHeld = !holder.signal.aborted;
    expect(await resource.write(key, second.fencingToken as number, 'second')).toBe(true);
    // The first holder's write, made while it still believes it holds the lock (or just after): refused.
    expect(await resource.write(key, holder.fencingToken as number, 'first')).toBe(false);
    const holderEnd = await holderLost;
    await second.release();
    expect(await resource.read(key)).toEqual({ token: second.fencingToken, writer: 'second' });
    report({ case: 'async, replicas cut before the grant', doubleGrant: bothHeld, windowMs: bothHeld ? Math.round(holderEnd - secondAt) : 0, ttlMs: TTL_MS });
  }, 60_000);

  it('with replicaAck: the grant the replicas missed is refused, and a confirmed one survives the failover: nobody else gets it meanwhile', async () => {
    const key = `dg:${run}:ack`;
    await resource.reset(key);
    const acked = locksOn({ replicas: 1, timeoutMs: 500 });
    const holder = await acked.acquire(key, { ttl: TTL_MS });
    let lostAt: number | undefined;
    holder.signal.addEventListener('abort', () => (lostAt = performance.now()), { once: true });
    await cutReplicas();
    const refused = await acked.acquire(`${key}:after-cut`, { ttl: TTL_MS }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LockNotReplicatedError);
    expect(refused).toMatchObject({ reason: 'too-few-replicas', acknowledged: 0 });
    // The replica the master lost keeps what it had: the lock confirmed before the cut.
    await failover();
    const other = locksOn({ replicas: 1, timeoutMs: 500 });
    const second = other.acquire(key, { ttl: TTL_MS, waitTimeout: 30_000 });
    // Hold on a little past the failover, then give it up; the second grant must come after.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const heldThroughFailover = !holder.signal.aborted;
    const releasedAt = performance.now();
    await holder.release().catch(() => undefined);
    const holderEnd = lostAt ?? releasedAt;
    const granted = await second;
    const secondAt = performance.now();
    expect(secondAt).toBeGreaterThanOrEqual(holderEnd);
    expect(await resource.write(key, granted.fencingToken as number, 'second')).toBe(true);
    await granted.release();
    report({ case: 'replicaAck 1/500 ms, replicas cut after the grant', doubleGrant: false, windowMs: 0, ttlMs: TTL_MS, heldThroughFailover });
  }, 60_000);

  it('without replicaAck: a frozen master that comes back is left by every connection, and its holder is told before Sentinel demotes it', async () => {
    const key = `dg:${run}:frozen`;
    await resource.reset(key);
    // A service that served before the failover: its connection must leave the old master too.
    const bystander = locksOn();
    await (await bystander.acquire(`${key}:warm`)).release();
    await cutReplicas();
    // The default lease, extended every 10 s: granted on the master only.
    const holder = await locksOn().acquire(key);
    const holderLost = lossOf(holder);
    const oldPort = (await sentinelMasterPort(sentinel, masterName)) as number;
    expect(faults.pause(MASTER)).toBe(true);
    for (const replica of REPLICAS) expect(faults.resume(replica)).toBe(true);
    await promotedReplica(sentinel, masterName, oldPort);
    // Back, and still a master in its own eyes until Sentinel turns it into a replica (about 10 s later).
    expect(faults.resume(MASTER)).toBe(true);
    const fresh = locksOn();
    const second = await fresh.acquire(key, { waitTimeout: 20_000 });
    const secondAt = performance.now();
    const bothHeld = !holder.signal.aborted;
    expect(await resource.write(key, second.fencingToken as number, 'second')).toBe(true);
    const oldMaster = adminClient(oldPort);
    try {
      const demoted = waitUntil('Sentinel to demote the old master', async () => (await roleOf(oldMaster).catch(() => '')) === 'slave', 30_000, 100).then(() => 'demoted');
      expect(await Promise.race([holderLost.then(() => 'told'), demoted])).toBe('told');
      expect(await roleOf(oldMaster)).toBe('master');
    } finally {
      oldMaster.disconnect();
    }
    const holderEnd = await holderLost;
    expect(holder.signal.reason).toBeInstanceOf(LockLostError);
    expect(await holder.release()).toBe(false);
    // Once Sentinel announced the switch, the service connected before it locks on the new master as well.
    await failoverEnded(sentinel, masterName);
    const other = await fresh.acquire(`${key}:other`);
    expect(await bystander.tryAcquire(`${key}:other`)).toBeNull();
    await other.release();
    await second.release();
    report({ case: 'async, master frozen and back, replicas cut before the grant', doubleGrant: bothHeld, windowMs: bothHeld ? Math.round(holderEnd - secondAt) : 0, reason: (holder.signal.reason as LockLostError).reason });
  }, 60_000);

  for (const fault of ['killed', 'frozen'] as const) {
    it(`without replicaAck, lease 6 s, master ${fault}: the holder is told once its client reaches the promoted master, before its lease ends`, async () => {
      const key = `dg:${run}:lease-${fault}`;
      await resource.reset(key);
      await cutReplicas();
      // An explicit lease, not extended: only the promoted master can tell the holder before it ends.
      const holder = await locksOn().acquire(key, { ttl: 6_000 });
      const holderLost = lossOf(holder);
      const leaseEnd = holder.expiresAt;
      const oldPort = (await sentinelMasterPort(sentinel, masterName)) as number;
      if (fault === 'killed') await faults.kill(MASTER);
      else expect(faults.pause(MASTER)).toBe(true);
      for (const replica of REPLICAS) expect(faults.resume(replica)).toBe(true);
      await promotedReplica(sentinel, masterName, oldPort);
      const second = await locksOn().acquire(key, { ttl: 6_000, waitTimeout: 20_000 });
      const secondAt = performance.now();
      const bothHeld = !holder.signal.aborted;
      expect(await resource.write(key, second.fencingToken as number, 'second')).toBe(true);
      const holderEnd = await holderLost;
      const lostAt = Date.now();
      const reason = (holder.signal.reason as LockLostError).reason;
      // Found lost on the promoted master, not assumed at the lease's end.
      expect(reason).not.toBe('expired');
      expect(lostAt).toBeLessThan(leaseEnd);
      expect(await resource.write(key, holder.fencingToken as number, 'first')).toBe(false);
      await second.release();
      if (fault === 'frozen') expect(faults.resume(MASTER)).toBe(true);
      report({ case: `async, lease 6 s, master ${fault}, replicas cut before the grant`, doubleGrant: bothHeld, windowMs: bothHeld ? Math.round(holderEnd - secondAt) : 0, reason, toldBeforeLeaseEndMs: leaseEnd - lostAt, ttlMs: 6_000 });
    }, 60_000);
  }

  it('with replicaAck: a failover during a pending WAIT fails that call alone; the promoted master grants again', async () => {
    const key = `dg:${run}:ack-dropped`;
    const acked = locksOn({ replicas: 1, timeoutMs: 2_000 });
    await (await acked.acquire(`${key}:warm`)).release();
    // Held (and confirmed) through the failover by another service, and waited for by a third, in line
    // before the replicas are cut (its re-checks write nothing that must be confirmed: a short WAIT).
    const busy = await locksOn({ replicas: 1, timeoutMs: 2_000 }).acquire(`${key}:busy`, { ttl: 30_000 });
    const askedAt = performance.now();
    const waiter = locksOn({ replicas: 1, timeoutMs: 20 })
      .acquire(`${key}:busy`, { ttl: TTL_MS, waitTimeout: 8_000 })
      .then(
        (lock) => ({ outcome: 'granted', lock }),
        (error: unknown) => ({ outcome: error instanceof Error ? error.name : String(error), lock: undefined }),
      )
      .then((ended) => ({ ...ended, afterMs: Math.round(performance.now() - askedAt) }));
    const onMaster = adminClient((await sentinelMasterPort(sentinel, masterName)) as number);
    try {
      await waitUntil('the waiter to be in line', async () => (await onMaster.zcard(redisLockKeys('dlock:', `${key}:busy`).keys[1])) === 1, 3_000, 10);
    } finally {
      onMaster.disconnect();
    }
    await cutReplicas();
    const oldPort = (await sentinelMasterPort(sentinel, masterName)) as number;
    const pending = acked.acquire(key, { ttl: TTL_MS }).catch((error: unknown) => error);
    await waitPendingOn(oldPort);
    await faults.kill(MASTER);
    for (const replica of REPLICAS) expect(faults.resume(replica)).toBe(true);
    await promotedReplica(sentinel, masterName, oldPort);
    const dropped = await pending;
    // The connection closed under the WAIT: no answer of the server's, so no refusal of WAIT.
    expect(dropped).not.toMatchObject({ reason: 'wait-unsupported' });
    // The same strategy grants again once the promoted master has a replica (Sentinel points the other one at it).
    const started = performance.now();
    const errors: string[] = [];
    let granted: Lock | undefined;
    while (!granted && performance.now() - started < 20_000) {
      try {
        granted = await acked.acquire(key, { ttl: TTL_MS, waitTimeout: 8_000 });
      } catch (error) {
        errors.push(error instanceof LockNotReplicatedError ? `${error.name}(${error.reason})` : error instanceof Error ? error.name : String(error));
        if (error instanceof LockNotReplicatedError) expect(error.reason).not.toBe('wait-unsupported');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    expect(granted).toBeDefined();
    await granted?.release();
    // The waiter's wait (8 s) spans the failover: it ends at its waitTimeout or with the lock, never early.
    const waited = await waiter;
    await waited.lock?.release();
    await busy.release().catch(() => undefined);
    report({ case: 'replicaAck 1/2000 ms, connection dropped under WAIT by the failover', grantedAfterMs: Math.round(performance.now() - started), errors, waiterThroughFailover: { outcome: waited.outcome, afterMs: waited.afterMs } });
    if (waited.outcome === 'LockAcquireTimeoutError') expect(waited.afterMs).toBeGreaterThanOrEqual(8_000);
  }, 60_000);
});

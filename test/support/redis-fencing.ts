import type { HistoryLog } from './history/history-log';
import { waitUntil } from '../../scripts/services/probes';
import { LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { redisLockKeys } from '@app/distributed-lock/strategies/redis/redis-keys';
import { Redis } from 'ioredis';

/** The key of a lock's fencing counter, under the strategy's default namespace. */
export function fenceKeyOf(key: string): string {
  return redisLockKeys('dlock:', key).keys[3];
}

/**
 * A plain client for set-up and inspection. Every command is bounded, and it stops reconnecting after
 * about 5 s, so that a client of a server the test killed cannot keep the run busy.
 */
export function adminClient(port: number): Redis {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 3_000,
    retryStrategy: (attempt) => (attempt > 50 ? null : 100),
  });
  client.on('error', () => undefined);
  return client;
}

/**
 * Resolves once `replicas` replicas acknowledge a write of `master`'s. WAIT counts the replicas that have
 * this connection's last write, so a WAIT on a connection that wrote nothing answers at once with every
 * connected replica, though a replica's first acknowledgement of a real write can come up to a second after
 * its sync: write, then WAIT.
 */
export function replicasConfirmWrites(master: Redis, replicas: number): Promise<void> {
  return waitUntil(
    `${replicas} replica(s) to confirm a write`,
    async () => {
      await master.set('test:replicas-confirm-writes', String(Date.now()));
      return (await master.wait(replicas, 100)) >= replicas;
    },
    10_000,
    50,
  );
}

/**
 * Takes and releases `key` `count` times, one after the other, through a fresh `RedisLockStrategy` on
 * `url` (closed at the end): the fencing token of each grant, in order.
 */
export async function grantTokens(url: string, key: string, count: number, history?: HistoryLog): Promise<number[]> {
  const manager = new LockManager(new RedisLockStrategy({ connection: url }), { operationTimeout: 3_000 });
  const locks = new LockService(manager);
  const tokens: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const lock = await locks.acquire(key, { ttl: 10_000, waitTimeout: 3_000 });
      const hold = history?.begin(url, lock);
      const token = lock.fencingToken;
      hold?.sectionEnded();
      await lock.release();
      hold?.outcome('resolved');
      if (token === undefined) throw new Error(`no fencing token from ${url} for ${key}`);
      tokens.push(token);
    }
    return tokens;
  } finally {
    await manager.close();
  }
}

/** The port Sentinel names as the master of `masterName`, or undefined while it names none. */
export async function sentinelMasterPort(sentinel: Redis, masterName: string): Promise<number | undefined> {
  const answer = await sentinel.call('SENTINEL', 'get-master-addr-by-name', masterName);
  return Array.isArray(answer) && answer.length === 2 ? Number(answer[1]) : undefined;
}

/** The replicas Sentinel knows of `masterName`, with its flags ("slave" alone: reachable and healthy). */
export async function sentinelReplicas(sentinel: Redis, masterName: string): Promise<Array<{ port: number; flags: string }>> {
  const answer = await sentinel.call('SENTINEL', 'replicas', masterName);
  if (!Array.isArray(answer)) return [];
  return answer.map((fields: unknown) => {
    // Each replica is a flat list: name, value, name, value…
    const list = Array.isArray(fields) ? fields.map(String) : [];
    const field = (name: string): string => {
      const at = list.indexOf(name);
      return at >= 0 ? (list[at + 1] ?? '') : '';
    };
    return { port: Number(field('port')), flags: field('flags') };
  });
}

/** The role a Redis reports of itself: "master", "slave" (replica) or "sentinel". */
export async function roleOf(client: Redis): Promise<string> {
  const answer = await client.call('ROLE');
  return Array.isArray(answer) ? String(answer[0]) : '';
}

/**
 * Resolves once Sentinel names another server than `oldPort` as the master of `masterName` and that server
 * says it is a master (Sentinel names it a little before its REPLICAOF NO ONE is done): its port.
 */
export async function promotedReplica(sentinel: Redis, masterName: string, oldPort: number, timeoutMs = 30_000): Promise<number> {
  let promoted = 0;
  await waitUntil(
    `Sentinel to promote a replica of ${masterName} (logs under the Sentinel's instance dir)`,
    async () => {
      const port = await sentinelMasterPort(sentinel, masterName).catch(() => undefined);
      if (port === undefined || port === oldPort) return false;
      const server = adminClient(port);
      try {
        if ((await roleOf(server).catch(() => '')) !== 'master') return false;
      } finally {
        server.disconnect();
      }
      promoted = port;
      return true;
    },
    timeoutMs,
    100,
  );
  return promoted;
}

/** Resolves once Sentinel sees `count` healthy replicas of `masterName` (flags "slave" alone). */
export async function healthyReplicas(sentinel: Redis, masterName: string, count: number): Promise<void> {
  await waitUntil('Sentinel to see the replicas healthy', async () => (await sentinelReplicas(sentinel, masterName)).filter((replica) => replica.flags === 'slave').length >= count, 15_000, 100);
}

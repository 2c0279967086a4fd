import type { Redis } from 'ioredis';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';
import type { KeyListing, LockInspection } from '../../locking/lock-query';
import { isPermissionReply } from './redis-acl';
import type { RedisLockClient } from './redis-client.type';
import { isRedisCluster } from './redis-key-pipeline';
import { listRedisLockKeys } from './redis-key-listing';
import type { RedisLockKeyNames } from './redis-keys';
import { INSPECT_SCRIPT, type ReleaseArgs } from './redis-lock.scripts';
import { inspectionOf, QUERY_WAITERS_LIMIT } from './redis-lock-inspection';
import { RedisScript } from './redis-script';

/** What the operator's calls need of the Redis strategy: its client, key names, release, and its errors. */
export interface RedisLockOperatorSite {
  readonly name: string;
  readonly client: RedisLockClient;
  readonly keyNames: RedisLockKeyNames;
  /** The strategy's release script, which a break runs as the holder's release would. */
  readonly release: RedisScript<ReleaseArgs, 0 | 1>;
  /** The release's barging window (0 in fair mode). */
  readonly bargeMs: number;
  callError(error: unknown, operation: string, key?: string): unknown;
}

/**
 * The operator's calls on the Redis strategy's locks (`LockService.query`, `queryPrefix`, `breakLock`):
 * read-only scripts and SCAN, and the break. None of it is on an acquisition's path.
 */
export class RedisLockOperator {
  private readonly inspectScript = new RedisScript(INSPECT_SCRIPT);

  constructor(private readonly site: RedisLockOperatorSite) {}

  /**
   * The writer or the live readers, and the live waiters of Redis's queue in its order (the first
   * QUERY_WAITERS_LIMIT), in one read-only script. Times come from the server's clock, moved onto this
   * process's by the server's "now" in the same reply, taken as the middle of the round trip: off by half
   * of it at most, however long the reply waited to be read.
   */
  async inspect(key: string): Promise<LockInspection> {
    const sentAt = Date.now();
    try {
      const reply = await this.inspectScript.run(this.site.client, this.site.keyNames.of(key).keys, [QUERY_WAITERS_LIMIT]);
      return inspectionOf(reply, Math.round((sentAt + Date.now()) / 2));
    } catch (error) {
      throw this.site.callError(error, 'query', key);
    }
  }

  /**
   * The keys under `prefix` that are held now, a page at a time (see listRedisLockKeys): SCAN, never KEYS.
   * A single Redis or Sentinel; a Cluster's keys are on many nodes, which one SCAN does not cover.
   */
  async listKeys(prefix: string, page: { readonly cursor?: string; readonly limit: number }): Promise<KeyListing> {
    const { name, client, keyNames } = this.site;
    if (isRedisCluster(client)) {
      throw new InvalidLockOptionsError('strategy', `strategy "${name}" runs on a Redis Cluster, whose keys no one SCAN lists: queryPrefix answers on a single Redis or Sentinel (query one key at a time here).`);
    }
    if (page.cursor !== undefined && !/^\d{1,20}$/.test(page.cursor)) throw new InvalidLockOptionsError('cursor', 'expected the `next` string of the previous page of this strategy.');
    try {
      return await listRedisLockKeys(client as unknown as Pick<Redis, 'scan'>, keyNames.namespace, prefix, page);
    } catch (error) {
      // SCAN is not in the ACL recipe for locking: a user allowed only that is told what queryPrefix also needs.
      if (isPermissionReply(error)) throw new LockPermissionDeniedError(name, 'queryPrefix', 'the +scan command (queryPrefix lists the lock keys with SCAN)', { key: prefix, cause: error });
      throw this.site.callError(error, 'queryPrefix', prefix);
    }
  }

  /**
   * Ends the writer's hold (all of its re-entries) or each live reader's, as their releases would: the lock
   * goes to the queue's head. Owner by owner, each release only ends the hold it names: a holder that came
   * after the inspection is not broken. The holders learn at their next extension or release.
   */
  async breakLock(key: string): Promise<LockInspection['holders']> {
    const { holders } = await this.inspect(key);
    const keys = this.site.keyNames.of(key);
    const broken: Array<LockInspection['holders'][number]> = [];
    try {
      for (const holder of holders) {
        const ended = await this.site.release.run(this.site.client, keys.keys, [holder.owner, keys.channel, '0', this.site.bargeMs, '1']);
        if (ended === 1) broken.push(holder);
      }
    } catch (error) {
      throw this.site.callError(error, 'breakLock', key);
    }
    return broken;
  }
}

import type { KeyListing, LockInspection } from '../../locking/lock-query';
import { decodedKeyName, pageOfSortedKeys } from '../key-pages';
import { ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';
import { recordBreak } from './zookeeper-break-record';
import { inspectZooKeeperLock } from './zookeeper-lock-inspection';
import { onOperatorSession } from './zookeeper-operator-session';
import { zkLockPath } from './zookeeper-paths';
import type { ZooKeeperSession } from './zookeeper-session';

/** The data `breakLock` writes into a holder's node before deleting it (a holder never writes its own). */
const BROKEN_MARK = 'broken';

/**
 * The operator's calls on the ZooKeeper strategy's locks (`LockService.query`, `queryPrefix`, `breakLock`):
 * reads of the lock nodes, and the break, on the strategy's session. None of it is on an acquisition's path.
 */
export class ZooKeeperLockOperator {
  constructor(
    private readonly session: ZooKeeperSession,
    private readonly basePath: string,
    /** The typed error for a refusal by the ACL (see zkPermissionDenied), undefined for any other. */
    private readonly permissionDenied: (error: unknown, operation: string, key?: string) => Error | undefined,
  ) {}

  /** The holders and waiters of `key`: its lock node's children, in order, with their data (see inspectZooKeeperLock). */
  async inspect(key: string): Promise<LockInspection> {
    const { holds, waiters } = await this.onSession('query', key, (client) => inspectZooKeeperLock(client, zkLockPath(this.basePath, key)));
    return { holders: holds.map((hold) => hold.holder), waiters };
  }

  /**
   * The keys under `prefix` that have a lock node, a page at a time in key order: one listing of the base
   * path's children (ZooKeeper has no paging of children; lock nodes are containers, deleted by the server
   * a while after their last contender left, so a page may name a key that is free by now: `queryPrefix`
   * leaves those out). Semaphore nodes ("sem:…") are not locks.
   */
  listKeys(prefix: string, page: { readonly cursor?: string; readonly limit: number }): Promise<KeyListing> {
    return this.onSession('queryPrefix', prefix, async (client) => {
      let children: string[];
      await client.sync(this.basePath);
      try {
        children = await client.get_children(this.basePath, false);
      } catch (error) {
        if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return { keys: [] };
        throw error;
      }
      const keys = children.flatMap((name) => {
        const key = name.includes(':') ? undefined : decodedKeyName(name);
        return key !== undefined && key.startsWith(prefix) ? [key] : [];
      });
      return pageOfSortedKeys(keys, page);
    });
  }

  /**
   * Ends the holds a fresh inspection of `key` sees: their node names go into the lock node's break record
   * first (see zookeeper-break-record.ts), then each node's data is marked and the node deleted. The mark
   * is written only over the data version the look read: a node passed to another owner of its process
   * since (`localHandover`) holds for a hold that came after the look, and is left alone, as is a node gone
   * meanwhile; neither is named. The mark fires the holder's watch on its node: it is told "broken" at
   * once; one whose watch was not set yet reads the record when it finds its node gone.
   */
  breakLock(key: string): Promise<LockInspection['holders']> {
    const lockPath = zkLockPath(this.basePath, key);
    return this.onSession('breakLock', key, async (client) => {
      const { holds } = await inspectZooKeeperLock(client, lockPath);
      if (holds.length === 0 || !(await recordBreak(client, lockPath, holds.map((hold) => hold.name)))) return [];
      const ended: Array<LockInspection['holders'][number]> = [];
      for (const hold of holds) {
        const node = `${lockPath}/${hold.name}`;
        try {
          // The mark fires the holder's watch on its node: it is told "broken" at once (see ZooKeeperHeldNodes).
          await client.set(node, BROKEN_MARK, hold.version);
          await client.delete_(node, -1);
          ended.push(hold.holder);
        } catch (error) {
          const code = zkErrorCode(error);
          if (code !== ZK_ERRORS.NO_NODE && code !== ZK_ERRORS.BAD_VERSION) throw error;
        }
      }
      return ended;
    });
  }

  /** See onOperatorSession. */
  private onSession<T>(operation: string, key: string, call: (client: ZooKeeperLockClient) => Promise<T>): Promise<T> {
    return onOperatorSession(this.session, this.permissionDenied, operation, key, call);
  }
}

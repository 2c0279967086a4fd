// The raw ZooKeeper floors: an ephemeral node's create and delete, and the ZooKeeper recipe's own calls.
import { randomUUID } from 'node:crypto';
import type { BenchLock } from '../bench-subject';
import { connectZooKeeper, ZK_CREATE } from '../bench-env';
import { yieldLoop } from './yield-loop';

/** The ZooKeeper floor: create a fixed ephemeral node and delete it; contenders retry its create. */
export function rawZooKeeperFloor(): () => Promise<BenchLock> {
  return async () => {
    const client = await connectZooKeeper('/bench-floor');
    return {
      async acquire(key, waitMs) {
        const path = `/bench-floor/${encodeURIComponent(key)}`;
        const deadline = Date.now() + waitMs;
        for (;;) {
          try {
            await client.create(path, '', ZK_CREATE.EPHEMERAL);
            return async () => {
              await client.delete_(path, -1);
            };
          } catch (error) {
            if (!String((error as Error).message).startsWith('-110') || Date.now() > deadline) throw error;
            await yieldLoop();
          }
        }
      },
      close: async () => client.close(),
    };
  };
}

/**
 * The ZooKeeper strategy's own server operations for a free lock, raw: a protected ephemeral sequential
 * node created under the lock's node with the children listing sent right behind it (as the strategy
 * does), then its delete; not the lowest: delete and retry after yielding. Through the strategy's client,
 * like `floor:zookeeper create + delete`. Against that floor it shows what the listing, the call the
 * sequential recipe adds, costs.
 */
export function rawZooKeeperRecipeFloor(): () => Promise<BenchLock> {
  return async () => {
    const base = '/bench-floor-recipe';
    const client = await connectZooKeeper(base);
    const lockNodes = new Set<string>();
    const sequenceOf = (name: string): string => name.slice(-10);
    return {
      async acquire(key, waitMs) {
        const lockPath = `${base}/${encodeURIComponent(key)}`;
        if (!lockNodes.has(lockPath)) {
          await client.create(lockPath, '', ZK_CREATE.PERSISTENT).catch(() => undefined);
          lockNodes.add(lockPath);
        }
        const deadline = Date.now() + waitMs;
        for (;;) {
          const creating = client.create(`${lockPath}/${randomUUID()}-`, '', ZK_CREATE.EPHEMERAL_SEQUENTIAL);
          const listing = client.get_children(lockPath, false);
          const [path, children] = await Promise.all([creating, listing]);
          const ours = sequenceOf(path);
          if (children.every((child) => sequenceOf(child) >= ours)) {
            return async () => {
              await client.delete_(path, -1);
            };
          }
          await client.delete_(path, -1);
          if (Date.now() > deadline) throw new Error('timeout');
          await yieldLoop();
        }
      },
      close: async () => client.close(),
    };
  };
}

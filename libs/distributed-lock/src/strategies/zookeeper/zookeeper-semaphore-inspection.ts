import type { SemaphoreInspection } from '../../locking/lock-query';
import { permitLineInspection } from '../permit-line';
import { ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';
import { QUERY_CONTENDERS_LIMIT, readContender } from './zookeeper-lock-inspection';
import { zkSequence } from './zookeeper-paths';
import { permitNodeSize, permitNodeWeight, readSemaphoreRecord, semaphoreSize } from './zookeeper-semaphore-size';

/**
 * The size, holders and waiters of the semaphore node `path`, from ZooKeeper's own state: the size its node
 * records, its permit nodes of that size in sequence order (at most QUERY_CONTENDERS_LIMIT), then each one's
 * data (the owner id) and stat at once. The holders are the head whose weights fit, as the recipe grants;
 * their fencing token is their node's creation zxid. Nodes of another size are callers being refused, on
 * their way out; a node gone between the listing and its read has left. No times, as for the lock.
 */
export async function inspectZooKeeperSemaphore(client: ZooKeeperLockClient, path: string): Promise<SemaphoreInspection> {
  let children: string[];
  let permits: number | undefined;
  // What other processes' servers confirmed before the query is seen: the server of this session may lag.
  await client.sync(path);
  try {
    const [record, listed] = await Promise.all([readSemaphoreRecord(client, path), client.get_children(path, false)]);
    children = listed;
    permits = semaphoreSize(record, listed);
  } catch (error) {
    if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return { holders: [], waiters: [] };
    throw error;
  }
  const line = children
    .filter((name) => permitNodeSize(name) === permits)
    .sort((a, b) => zkSequence(a) - zkSequence(b))
    .slice(0, QUERY_CONTENDERS_LIMIT);
  const read = await Promise.all(line.map((name) => readContender(client, `${path}/${name}`)));
  const present = line.flatMap((name, i) => {
    const node = read[i];
    return node ? [{ owner: node.owner, weight: permitNodeWeight(name), fencingToken: node.czxid }] : [];
  });
  // Nobody in it: its size is free to change (the next caller of another size clears the node).
  return permitLineInspection(present.length > 0 ? permits : undefined, present);
}

import type { LockInspection } from '../../locking/lock-query';
import { holdersAhead } from '../read-write-line';
import { ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';
import { decodeHoldData, zkFencingToken } from './zookeeper-hold-token';
import { isZkWriter, zkSequence } from './zookeeper-paths';

/**
 * The most contender nodes a query reads, in ZooKeeper's order: the holders, then the waiters. A longer line
 * is cut there, as Redis's queue is at its first 1,000 waiters.
 */
export const QUERY_CONTENDERS_LIMIT = 1_000;

/**
 * A hold as an inspection saw it: what `query` reports of it, its node's name, which a break deletes, and
 * the node's data version then, which a pass to another owner of the holder's process changes.
 */
export interface ZooKeeperHoldSeen {
  readonly holder: LockInspection['holders'][number];
  readonly name: string;
  readonly version: number;
}

/** What an inspection saw of a lock: its holds, and its waiters in the order ZooKeeper serves them. */
export interface ZooKeeperLockSeen {
  readonly holds: readonly ZooKeeperHoldSeen[];
  readonly waiters: NonNullable<LockInspection['waiters']>;
}

/** A contender node's name: the protection id, the mode, the sequence ZooKeeper appended. */
const CONTENDER = /^_c_.+-(read|write)-\d{10}$/;

/**
 * Who holds the lock node `lockPath` and who waits, from ZooKeeper's own state: its children in sequence
 * order, then each one's data (the owner id) and stat at once. The holders are the writer at the head or
 * the readers before the first writer; their fencing token is their node's creation zxid and the passes its
 * data counts, as a holder's is (see zkFencingToken).
 * No times: ZooKeeper keeps no lease (a node lives as long as its session) and no grant time.
 * A node that goes between the listing and its read has left: it is not listed.
 */
export async function inspectZooKeeperLock(client: ZooKeeperLockClient, lockPath: string): Promise<ZooKeeperLockSeen> {
  let children: string[];
  // What other processes' servers confirmed before the query is seen (a follower may lag), and a break ends it.
  await client.sync(lockPath);
  try {
    children = await client.get_children(lockPath, false);
  } catch (error) {
    if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return { holds: [], waiters: [] };
    throw error;
  }
  const line = children
    .filter((name) => CONTENDER.test(name))
    .sort((a, b) => zkSequence(a) - zkSequence(b))
    .slice(0, QUERY_CONTENDERS_LIMIT);
  const read = await Promise.all(line.map((name) => readContender(client, `${lockPath}/${name}`)));
  const present = line.flatMap((name, i) => {
    const node = read[i];
    return node ? [{ name, node, mode: isZkWriter(name) ? ('exclusive' as const) : ('shared' as const) }] : [];
  });
  const holding = holdersAhead(present.map((contender) => contender.mode));
  return {
    holds: present.slice(0, holding).map(({ name, node, mode }) => ({ name, version: node.version, holder: { owner: node.owner, mode, fencingToken: zkFencingToken(node.czxid, node.pass) } })),
    waiters: present.slice(holding).map(({ node, mode }) => ({ owner: node.owner, mode })),
  };
}

/** A contender node's owner id, passes (see decodeHoldData), creation zxid and data version; undefined when it is gone. */
export async function readContender(client: ZooKeeperLockClient, path: string): Promise<{ owner: string; pass: number; czxid: number; version: number } | undefined> {
  try {
    const [stat, data] = await client.get(path, false);
    return { ...decodeHoldData(data.toString()), czxid: stat.czxid, version: stat.version };
  } catch (error) {
    if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return undefined;
    throw error;
  }
}

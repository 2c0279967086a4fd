import { ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';
import { zkSequence } from './zookeeper-paths';

/** A permit node's name: protection id, the semaphore's size and the permit's weight, then ZooKeeper's sequence. */
const PERMIT_NODE_NAME = /-p(\d+)-w(\d+)-\d{10}$/;

/** The size a permit node was asked with (in its name); undefined for a name that is not a permit node's. */
export function permitNodeSize(name: string): number | undefined {
  const match = PERMIT_NODE_NAME.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** The weight of a permit node (in its name); 0 for a name that is not a permit node's. */
export function permitNodeWeight(name: string): number {
  const match = PERMIT_NODE_NAME.exec(name);
  return match ? Number(match[2]) : 0;
}

/** What the semaphore's node records, as read. */
export interface SemaphoreRecord {
  /** The size it was created with; undefined when it records none (made by a version that did not). */
  readonly size: number | undefined;
  /** Its data version, for a versioned delete. */
  readonly version: number;
}

/** Reads the semaphore's node. Rejects as the client does (NO_NODE when there is none). */
export async function readSemaphoreRecord(client: ZooKeeperLockClient, path: string): Promise<SemaphoreRecord> {
  const [stat, data] = (await client.get(path, false)) as [{ version?: number | string } | undefined, unknown];
  const text = data === null || data === undefined ? '' : String(data);
  const size = /^[1-9]\d*$/.test(text) ? Number(text) : undefined;
  return { size, version: Number(stat?.version ?? 0) };
}

/**
 * The size of the semaphore whose queue is `children` (a listing that includes our node). Its node records
 * the size it was created with, by the semaphore's first caller, and keeps it for as long as anyone holds or
 * waits: ZooKeeper deletes no node that has children (a versioned delete is refused, and so is the
 * container reaper), and no data of it is ever set. So every caller in the queue reads the same size and
 * counts the same nodes. A node from a version that recorded nothing: the size of the first in line.
 */
export function semaphoreSize(record: SemaphoreRecord, children: readonly string[]): number | undefined {
  if (record.size !== undefined) return record.size;
  const first = children.filter((name) => permitNodeSize(name) !== undefined).sort((a, b) => zkSequence(a) - zkSequence(b))[0];
  return first === undefined ? undefined : permitNodeSize(first);
}

/**
 * Deletes the semaphore's node so that it is created again with another size: only if it has not changed
 * since `record` was read, and only while nobody is in it (ZooKeeper refuses to delete a node that has
 * children, so the check and the delete are one step). 'cleared' when gone (by us or already);
 * 'in-use' when someone joined or it changed meanwhile.
 */
export async function clearForResize(client: ZooKeeperLockClient, path: string, record: SemaphoreRecord): Promise<'cleared' | 'in-use'> {
  try {
    await client.delete_(path, record.version);
    return 'cleared';
  } catch (error) {
    const code = zkErrorCode(error);
    if (code === ZK_ERRORS.NO_NODE) return 'cleared';
    if (code === ZK_ERRORS.NOT_EMPTY || code === ZK_ERRORS.BAD_VERSION) return 'in-use';
    throw error;
  }
}

import { ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';

/** Names of earlier breaks kept beside a new break's (a holder reads the record within a round trip of its deletion). */
const KEPT_NAMES = 100;

/** Tries to add to the record against other breaks of the same lock writing theirs at the same time. */
const RECORD_TRIES = 5;

/**
 * The lock node's record of the breaks (`breakLock`): the names of the contender nodes they ended, written
 * into the lock node's data before they are deleted. A holder whose node is deleted reads it to tell a
 * break ("broken") from any other deletion ("removed"). It is kept on the lock node rather than on the
 * holder's own node because it must outlive that node: a holder that had not set its watch yet (a lock that
 * was free is watched only after a short delay) finds its node already gone. Node names carry a random
 * protection id, so a name never stands for another hold. The data of a lock node is otherwise empty.
 */
export function encodeBreakRecord(brokenNodes: readonly string[]): string {
  return JSON.stringify({ broken: brokenNodes });
}

/**
 * Adds `brokenNodes` to the break record of `lockPath`, keeping the latest names of earlier breaks: written
 * with the version read, so that two breaks at once each keep the other's names. False when the lock node
 * is gone (nothing is left to break); a refusal or a lost connection rejects as ZooKeeper answered.
 */
export async function recordBreak(client: ZooKeeperLockClient, lockPath: string, brokenNodes: readonly string[]): Promise<boolean> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      const [stat, data] = await client.get(lockPath, false);
      const earlier = brokenNodesOf(data.toString()).filter((name) => !brokenNodes.includes(name));
      const kept = earlier.slice(Math.max(0, earlier.length - Math.max(0, KEPT_NAMES - brokenNodes.length)));
      await client.set(lockPath, encodeBreakRecord([...kept, ...brokenNodes]), stat.version);
      return true;
    } catch (error) {
      const code = zkErrorCode(error);
      if (code === ZK_ERRORS.NO_NODE) return false;
      if (code !== ZK_ERRORS.BAD_VERSION || attempt >= RECORD_TRIES) throw error;
    }
  }
}

/** The node names the lock node's data says were broken; none for any other data. */
export function brokenNodesOf(data: string): readonly string[] {
  if (!data.startsWith('{')) return [];
  try {
    const value: unknown = JSON.parse(data);
    const broken = (value as { broken?: unknown } | null)?.broken;
    return Array.isArray(broken) ? broken.filter((name): name is string => typeof name === 'string') : [];
  } catch {
    return [];
  }
}

/**
 * Whether the deleted contender node `nodePath` was ended by a break: its name is in its lock node's break
 * record. The break wrote it before the delete, and a session reads the server's state at least as new as
 * the events it was told of: a holder told of its deletion finds it. False when it cannot be read.
 */
export async function wasBroken(client: ZooKeeperLockClient, nodePath: string): Promise<boolean> {
  const parent = nodePath.lastIndexOf('/');
  try {
    const [, data] = await client.get(nodePath.slice(0, parent), false);
    return brokenNodesOf(data.toString()).includes(nodePath.slice(parent + 1));
  } catch {
    return false;
  }
}

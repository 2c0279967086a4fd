import type { SameProcessLine } from '../same-process-line';
import { ZK_ERRORS, zkErrorCode } from './zookeeper-client.type';
import type { ZooKeeperOrphans } from './zookeeper-orphans';
import type { ZooKeeperSession } from './zookeeper-session';

/** What a deletion needs of the strategy: its session, its orphan sweeper, its line, its refusal check. */
export interface NodeDeletionContext {
  readonly session: ZooKeeperSession;
  readonly orphans: Pick<ZooKeeperOrphans, 'adopt'>;
  readonly line: Pick<SameProcessLine<unknown>, 'leave'>;
  /** The typed error for a refusal (NOAUTH), undefined for any other error. */
  readonly permissionDenied: (error: unknown) => Error | undefined;
}

/**
 * Deletes a contender node of ours; resolves false when it was already gone. When the answer is lost with
 * the connection, the node is handed to the orphan sweeper and deleted again later (the error still
 * surfaces). Either way the node leaves this process's line: a writer waiting here behind it looks again.
 */
export async function deleteContenderNode(context: NodeDeletionContext, path: string): Promise<boolean> {
  const { session } = context;
  try {
    for (let attempt = 0; ; attempt += 1) {
      const client = await session.client();
      try {
        await client.delete_(path, -1);
        return true;
      } catch (error) {
        // The session ended under the call (the client just learned of its expiry): asked again on a new
        // session, which finds the node gone with the old one, or deletes it.
        if (attempt === 0 && session.endedBy(client, error)) continue;
        throw error;
      }
    }
  } catch (error) {
    if (zkErrorCode(error) === ZK_ERRORS.NO_NODE) return false;
    // Refused: the lock node's ACL no longer lets us delete; retrying later would be refused alike.
    const denied = context.permissionDenied(error);
    if (denied) throw denied;
    const parent = path.lastIndexOf('/');
    context.orphans.adopt(path.slice(0, parent), path.slice(parent + 1));
    throw error;
  } finally {
    context.line.leave(path);
  }
}

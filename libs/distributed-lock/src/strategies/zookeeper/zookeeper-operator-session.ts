import type { ZooKeeperLockClient } from './zookeeper-client.type';
import type { ZooKeeperSession } from './zookeeper-session';

/**
 * An operator's call (a query, a break) on the session open now, made again once on a new session when that
 * one ended under it (a process that woke from a freeze); a refusal by the ACL becomes the typed error
 * `permissionDenied` makes of it.
 */
export async function onOperatorSession<T>(
  session: Pick<ZooKeeperSession, 'client' | 'endedBy'>,
  permissionDenied: (error: unknown, operation: string, key?: string) => Error | undefined,
  operation: string,
  key: string,
  call: (client: ZooKeeperLockClient) => Promise<T>,
): Promise<T> {
  try {
    const client = await session.client();
    try {
      return await call(client);
    } catch (error) {
      if (!session.endedBy(client, error)) throw error;
      return await call(await session.client());
    }
  } catch (error) {
    throw permissionDenied(error, operation, key) ?? error;
  }
}

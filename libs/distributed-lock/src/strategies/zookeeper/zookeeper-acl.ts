import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';
import { ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient } from './zookeeper-client.type';

/** ZOO_PERM_ALL: read, write, create, delete, admin ("cdrwa"). */
const PERM_ALL = 31;

/**
 * Every permission to the identity the session authenticated as, and none to anyone else. ZooKeeper's
 * "auth" scheme stands for the session's own authenticated ids (its digest user): the server writes that
 * id into the ACL when it sets it, so the library never computes or holds the password's hash.
 */
const CREATOR_ONLY_ACL = Object.freeze([Object.freeze({ perms: PERM_ALL, scheme: 'auth', auth: '' })]);

/**
 * Restricts a node the strategy just created to its own identity. The `zookeeper` package creates every
 * node with the open ACL (it passes ZOO_OPEN_ACL_UNSAFE to zoo_acreate and takes no ACL of its own), so the
 * ACL is set right after the create, by the same session. On the base node it keeps strangers from
 * creating or deleting lock nodes; on a lock node, from deleting (or adding) contender nodes: deleting a
 * node takes the DELETE permission of its parent.
 */
export async function restrictToCreator(client: ZooKeeperLockClient, path: string): Promise<void> {
  await client.set_acl(path, -1, CREATOR_ONLY_ACL as unknown as Parameters<ZooKeeperLockClient['set_acl']>[2]);
}

/** What a refused ZooKeeper call was doing, for the typed error. */
export interface ZooKeeperRefusal {
  readonly strategy: string;
  readonly operation: string;
  readonly basePath: string;
  /** The digest user name ("user" of "user:password"), never the password; undefined without digestAuth. */
  readonly user: string | undefined;
  readonly key?: string;
}

/**
 * `LockPermissionDeniedError` for a NOAUTH answer (the node's ACL does not let this session's identity
 * do that), undefined for any other error. NOAUTH is final: the call did not happen, so nothing created
 * is left behind and nothing is worth retrying.
 */
export function zkPermissionDenied(error: unknown, refusal: ZooKeeperRefusal): LockPermissionDeniedError | undefined {
  if (zkErrorCode(error) !== ZK_ERRORS.NO_AUTH) return undefined;
  const grant =
    refusal.user === undefined
      ? `the nodes under ${refusal.basePath} carry an ACL that an unauthenticated session does not pass: set \`digestAuth\` to the identity that owns them.`
      : `the digest identity "${refusal.user}" needs cdrwa on ${refusal.basePath} and on the lock nodes under it. Use the \`digestAuth\` of the identity that ` +
        `created them (a wrong password is another identity), or give "${refusal.user}" that ACL: setAcl -R ${refusal.basePath} digest:${refusal.user}:<hash>:cdrwa.`;
  return new LockPermissionDeniedError(refusal.strategy, refusal.operation, grant, { cause: error, key: refusal.key });
}

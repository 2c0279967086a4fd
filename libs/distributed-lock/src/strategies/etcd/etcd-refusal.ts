import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';

/** What a refused etcd call was doing, for the typed error. */
export interface EtcdRefusal {
  readonly strategy: string;
  readonly operation: string;
  /** The key prefix of every lock (the strategy's namespace). */
  readonly namespace: string;
  /** The etcd user of `connection.auth` (never its password); undefined with a client of your own. */
  readonly user: string | undefined;
  readonly key?: string;
}

/**
 * Whether etcd refused, and why. etcd3's error classes leave `name` as "Error": they are recognised by
 * their constructor, or by etcd's own message (as isLeaseGoneError does).
 */
function refusalOf(error: unknown): 'permission' | 'credentials' | undefined {
  if (!(error instanceof Error)) return undefined;
  const kind = error.constructor.name;
  if (kind === 'EtcdPermissionDeniedError' || error.message.includes('etcdserver: permission denied')) return 'permission';
  if (kind === 'EtcdAuthenticationFailedError' || error.message.includes('etcdserver: authentication failed')) return 'credentials';
  return undefined;
}

/**
 * `LockPermissionDeniedError` for etcd's refusals, undefined for any other error: "permission denied"
 * (the user's roles do not cover the lock prefix) names the `etcdctl` lines that grant it; "authentication
 * failed" (a wrong user name or password) says to check the credentials. Both are final: retrying is
 * refused alike.
 */
export function etcdPermissionDenied(error: unknown, refusal: EtcdRefusal): LockPermissionDeniedError | undefined {
  const why = refusalOf(error);
  if (!why) return undefined;
  const user = refusal.user ?? '<user>';
  const grant =
    why === 'permission'
      ? `the etcd user "${user}" needs readwrite on every key under "${refusal.namespace}": ` +
        `etcdctl role add <role>; etcdctl role grant-permission <role> --prefix=true readwrite ${refusal.namespace}; etcdctl user grant-role ${user} <role>.`
      : `etcd refused the credentials of user "${user}" (unknown user or wrong password): check \`connection.auth\`.`;
  return new LockPermissionDeniedError(refusal.strategy, refusal.operation, grant, { cause: error, key: refusal.key });
}

import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';

/**
 * The commands `RedisLockStrategy` sends: the scripts (EVALSHA, falling back to EVAL), the waiters'
 * subscriber connection, the health check and the shutdown. INFO is ioredis's ready check on connect
 * (without it ioredis warns on every connection; `enableReadyCheck: false` drops it).
 */
export const REDIS_CLIENT_COMMANDS = ['evalsha', 'eval', 'subscribe', 'unsubscribe', 'ping', 'quit', 'info'] as const;

/**
 * The commands the Lua scripts call: Redis checks a script's every `redis.call` against the user's ACL
 * too, so the user needs them although the client never sends them itself. Kept in step with
 * redis-lock.scripts.ts and redis-semaphore.scripts.ts by redis-acl.spec.ts.
 */
export const REDIS_SCRIPT_COMMANDS = [
  'del', 'exists', 'get', 'hdel', 'hget', 'hincrby', 'hmget', 'hset', 'pexpire', 'pttl', 'publish', 'set', 'time',
  'zadd', 'zcard', 'zrange', 'zrangebyscore', 'zremrangebyscore', 'zrem', 'zscore',
] as const;

/**
 * What Redlock's own scripts call on its masters besides the single-instance ones (the first master keeps
 * the line with those): one user serves every master. Kept in step by redis-acl.spec.ts. None today: its
 * GET is the fencing token's too.
 */
export const REDLOCK_EXTRA_SCRIPT_COMMANDS = [] as const;

/**
 * The least ACL rules under which `RedisLockStrategy` (or, with `redlock`, `RedlockStrategy` on each
 * master) works with key prefix `namespace`: its keys and its channels (lock channels and each instance's
 * inbox all start with the namespace), and exactly its commands. For `ACL SETUSER <user> on ><password>
 * <rules>`, or a `user` line of an ACL file.
 */
export function redisAclRules(namespace: string, redlock = false): string {
  const scriptCommands = redlock ? [...REDIS_SCRIPT_COMMANDS, ...REDLOCK_EXTRA_SCRIPT_COMMANDS].sort() : REDIS_SCRIPT_COMMANDS;
  const commands = [...REDIS_CLIENT_COMMANDS, ...scriptCommands].map((command) => `+${command}`);
  return ['resetkeys', `~${namespace}*`, 'resetchannels', `&${namespace}*`, '-@all', ...commands].join(' ');
}

/**
 * A NOPERM reply (a command, key or channel the user may not use), or a script whose inner command the
 * ACL refused (Redis 7 words it "The user executing the script can't run this command").
 */
export function isPermissionReply(error: unknown): error is Error {
  return error instanceof Error && (/^NOPERM\b/.test(error.message) || /can't run this command/.test(error.message));
}

/** Where a Redis call was made, for the error that says what to grant. */
export interface RedisCallSite {
  readonly strategy: string;
  readonly namespace: string;
  readonly operation: string;
  readonly key?: string;
  /** The call was Redlock's: the rules to grant include its scripts' commands. */
  readonly redlock?: boolean;
}

/**
 * What to throw for a failed Redis call: a permission reply becomes `LockPermissionDeniedError` naming the
 * ACL rules to grant, a refused login (WRONGPASS) one that says to check the credentials; any other error
 * is returned as it is; so is a failure of the connection, unless `loginRefusal` says the server refused
 * the login since the connection was last ready (see watchLoginRefusals), which is then what is told. The
 * credentials a failed AUTH or HELLO carries (ioredis keeps the command's arguments on the error) are
 * blanked out first.
 */
export function redisCallError(error: unknown, site: RedisCallSite, loginRefusal?: Error): unknown {
  redactRedisCredentials(error);
  // Not an answer of the server but the connection closing after it refused the login: the refusal is the news.
  if (loginRefusal && !isServerReply(error)) return redisCallError(loginRefusal, site);
  if (error instanceof Error && /^WRONGPASS\b/.test(error.message)) {
    const grant = 'the user name and password of `connection` (WRONGPASS: the user does not exist, is off, or has another password)';
    return new LockPermissionDeniedError(site.strategy, site.operation, grant, { key: site.key, cause: error });
  }
  if (!isPermissionReply(error)) return error;
  return new LockPermissionDeniedError(site.strategy, site.operation, `ACL SETUSER <user> ${redisAclRules(site.namespace, site.redlock)}`, { key: site.key, cause: error });
}

/** An error the server answered with (ioredis's ReplyError), as opposed to one of the connection. */
function isServerReply(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError';
}

/** Blanks the arguments of a failed AUTH or HELLO (user name and password) that ioredis left on the error. */
export function redactRedisCredentials(error: unknown): void {
  const command = (error as { command?: { name?: unknown; args?: unknown } } | null)?.command;
  if (!command || !Array.isArray(command.args) || !/^(auth|hello)$/i.test(String(command.name))) return;
  command.args = command.args.map(() => '[redacted]');
}

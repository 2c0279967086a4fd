import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { handOverLimits, type HandOverLimits } from '../../locking/hand-over-limits';
import { assertDuration, assertKnownKeys, describe } from '../../locking/lock-options';
import { strategyName } from '../strategy-name';
import { ZK_MAX_PASSES } from './zookeeper-hold-token';
import type { ZooKeeperLockStrategyOptions } from './zookeeper-lock.strategy';

const OPTION_KEYS = ['connect', 'sessionTimeout', 'digestAuth', 'name', 'basePath', 'connectTimeout', 'localHandover'];

/** What the ZooKeeper strategy keeps of its options, once they are checked. */
export interface ValidZooKeeperOptions {
  readonly name: string;
  readonly basePath: string;
  /** The digest user (the part of `digestAuth` before ":", never the password); undefined without `digestAuth`. */
  readonly digestUser: string | undefined;
  readonly connectTimeout: number;
  /** The limits of lock cohorting; undefined when it is off (`localHandover` unset or false). */
  readonly handOver: HandOverLimits | undefined;
}

/** Checks the ZooKeeper strategy's options before anything connects: bad input is an `InvalidLockOptionsError` naming the option. */
export function validZooKeeperOptions(options: ZooKeeperLockStrategyOptions): ValidZooKeeperOptions {
  const raw: unknown = options;
  assertKnownKeys(raw, OPTION_KEYS, 'ZooKeeperLockStrategy options');
  assertConnectString(options.connect);
  const name = strategyName(options.name, 'zookeeper');
  const basePath = options.basePath ?? '/dlock';
  if (!/^(\/[\w.-]+)+$/.test(basePath)) throw new InvalidLockOptionsError('basePath', `expected an absolute znode path such as "/dlock", got ${describe(basePath)}.`);
  if (options.sessionTimeout !== undefined) assertDuration(options.sessionTimeout, 'sessionTimeout', 1_000);
  if (options.digestAuth !== undefined && (typeof options.digestAuth !== 'string' || !options.digestAuth.includes(':'))) {
    throw new InvalidLockOptionsError('digestAuth', 'expected "user:password".');
  }
  const connectTimeout = assertDuration(options.connectTimeout ?? 10_000, 'connectTimeout', 100);
  return { name, basePath, digestUser: options.digestAuth?.slice(0, options.digestAuth.indexOf(':')), connectTimeout, handOver: validHandOver(options.localHandover) };
}

/** The `localHandover` limits, or undefined when nothing is ever passed; its passes are the fencing token's low 7 bits. */
function validHandOver(option: ZooKeeperLockStrategyOptions['localHandover']): HandOverLimits | undefined {
  if (option === undefined || option === false) return undefined;
  if (option === null) throw new InvalidLockOptionsError('localHandover', 'expected { passes?, windowMs? } or false, got null.');
  const limits = handOverLimits(option);
  if (limits.passes > ZK_MAX_PASSES) {
    throw new InvalidLockOptionsError('localHandover.passes', `at most ${ZK_MAX_PASSES} on ZooKeeper (a pass is the low part of the fencing token), got ${limits.passes}.`);
  }
  // No passes, or a window of 0 ms (every pass would be past it): nothing is ever passed, and arrival order holds.
  return limits.passes > 0 && limits.windowMs > 0 ? limits : undefined;
}

/**
 * A connect string the client can use as it is: host names or IPv4 addresses (the client splits a host at
 * its first ":", so an IPv6 address needs a name) with ports from 1 to 65535, and a chroot that is a
 * znode path (no empty, "." or ".." segment, no trailing "/"). The client would fail on anything else only
 * when it connects (a port out of range throws on a later tick, where nobody can catch it).
 */
function assertConnectString(connect: unknown): void {
  const expected = `expected "host:port[,host:port…][/chroot]", got ${describe(connect)}`;
  if (typeof connect !== 'string' || !/^[^\s,/:]+:\d+(,[^\s,/:]+:\d+)*(\/\S*)?$/.test(connect)) throw new InvalidLockOptionsError('connect', `${expected}.`);
  const slash = connect.indexOf('/');
  const hosts = slash < 0 ? connect : connect.slice(0, slash);
  for (const host of hosts.split(',')) {
    const port = Number(host.slice(host.lastIndexOf(':') + 1));
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new InvalidLockOptionsError('connect', `${expected}: port ${port} of "${host}" is not from 1 to 65535.`);
  }
  if (slash < 0) return;
  const chroot = connect.slice(slash);
  const segments = chroot.split('/').slice(1);
  if (chroot !== '/' && segments.some((segment) => segment === '' || segment === '.' || segment === '..')) {
    throw new InvalidLockOptionsError('connect', `${expected}: the chroot "${chroot}" is not a znode path (no empty, "." or ".." part, no "/" at the end).`);
  }
}

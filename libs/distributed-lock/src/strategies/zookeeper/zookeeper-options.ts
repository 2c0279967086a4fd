import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { assertDuration, assertKnownKeys, describe } from '../../locking/lock-options';
import { strategyName } from '../strategy-name';
import type { ZooKeeperLockStrategyOptions } from './zookeeper-lock.strategy';

const OPTION_KEYS = ['connect', 'sessionTimeout', 'digestAuth', 'name', 'basePath', 'connectTimeout'];

/** What the ZooKeeper strategy keeps of its options, once they are checked. */
export interface ValidZooKeeperOptions {
  readonly name: string;
  readonly basePath: string;
  /** The digest user (the part of `digestAuth` before ":", never the password); undefined without `digestAuth`. */
  readonly digestUser: string | undefined;
  readonly connectTimeout: number;
}

/** Checks the ZooKeeper strategy's options before anything connects: bad input is an `InvalidLockOptionsError` naming the option. */
export function validZooKeeperOptions(options: ZooKeeperLockStrategyOptions): ValidZooKeeperOptions {
  const raw: unknown = options;
  assertKnownKeys(raw, OPTION_KEYS, 'ZooKeeperLockStrategy options');
  if (typeof options.connect !== 'string' || !/^[^\s,]+:\d+(,[^\s,]+:\d+)*(\/[^\s]*)?$/.test(options.connect)) {
    throw new InvalidLockOptionsError('connect', `expected "host:port[,host:port…][/chroot]", got ${describe(options.connect)}.`);
  }
  const name = strategyName(options.name, 'zookeeper');
  const basePath = options.basePath ?? '/dlock';
  if (!/^(\/[\w.-]+)+$/.test(basePath)) throw new InvalidLockOptionsError('basePath', `expected an absolute znode path such as "/dlock", got ${describe(basePath)}.`);
  if (options.sessionTimeout !== undefined) assertDuration(options.sessionTimeout, 'sessionTimeout', 1_000);
  if (options.digestAuth !== undefined && (typeof options.digestAuth !== 'string' || !options.digestAuth.includes(':'))) {
    throw new InvalidLockOptionsError('digestAuth', 'expected "user:password".');
  }
  const connectTimeout = assertDuration(options.connectTimeout ?? 10_000, 'connectTimeout', 100);
  return { name, basePath, digestUser: options.digestAuth?.slice(0, options.digestAuth.indexOf(':')), connectTimeout };
}

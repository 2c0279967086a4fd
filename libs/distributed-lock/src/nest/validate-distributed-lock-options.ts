import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { validateLeaderElectionOptions } from '../election/leader-election-options';
import { validateLockKey } from '../locking/lock-key';
import { assertDuration, assertKnownKeys, describe, validateAcquireOptions } from '../locking/lock-options';
import type { LockStrategy } from '../locking/lock-strategy.interface';
import { assertInstanceName } from '../locking/owner-id';
import { DEFAULT_STRATEGY_NAME } from './distributed-lock.constants';
import { LOG_KEYS, type LogKeys } from './log-keys';
import { OPEN_TELEMETRY_OPTION_KEYS, validateOpenTelemetryOptions } from '../telemetry/lock-telemetry-options';
import type { DistributedLockFeatureOptions, DistributedLockModuleOptions, DistributedLockTelemetryOptions } from './distributed-lock-options.interface';

const MODULE_KEYS = ['strategies', 'defaultStrategy', 'keyPrefix', 'defaults', 'operationTimeout', 'instanceName', 'logEvents', 'logKeys', 'telemetry'];
const TELEMETRY_KEYS = [...OPEN_TELEMETRY_OPTION_KEYS, 'openTelemetry', 'observe'];
const FEATURE_KEYS = ['strategy', 'keyPrefix', 'defaults', 'elections'];
const STRATEGY_NAME = /^[A-Za-z][\w.-]{0,63}$/;

function isLockStrategy(value: unknown): value is LockStrategy {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<Record<keyof LockStrategy, unknown>>;
  return (
    typeof candidate.name === 'string' &&
    typeof candidate.capabilities === 'object' &&
    typeof candidate.tryAcquire === 'function' &&
    typeof candidate.release === 'function' &&
    typeof candidate.extend === 'function' &&
    typeof candidate.close === 'function'
  );
}

/** `forRoot`'s argument is an object: checked before anything reads it. */
export function assertOptionsGiven(options: unknown): void {
  if (typeof options === 'object' && options !== null) return;
  throw new InvalidLockOptionsError(
    'forRoot',
    `expected the module options, got ${describe(options)}. Pass at least the strategies: ` +
      'DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } }), or use forRootAsync({ useFactory }).',
  );
}

/** `forRootAsync`'s argument says where the options come from: checked before anything reads it. */
export function assertAsyncOptionsGiven(options: unknown): void {
  const given = typeof options === 'object' && options !== null ? (options as Record<string, unknown>) : undefined;
  if (given && (given.useFactory !== undefined || given.useClass !== undefined || given.useExisting !== undefined)) return;
  throw new InvalidLockOptionsError(
    'forRootAsync',
    `expected one of useFactory, useClass or useExisting, got ${given ? `an object with ${Object.keys(given).join(', ') || 'no fields'}` : describe(options)}. ` +
      'For example: DistributedLockModule.forRootAsync({ inject: [ConfigService], useFactory: (config) => ({ strategies: { default: … } }) }).',
  );
}

/** Checks module options at module creation; throws `InvalidLockOptionsError` that says what to fix. */
export function validateDistributedLockOptions(options: unknown): DistributedLockModuleOptions & { defaultStrategy: string | undefined } {
  assertKnownKeys(options, MODULE_KEYS, 'DistributedLockModule options');
  const { strategies } = options;
  assertKnownKeys(strategies, Object.keys(strategies ?? {}), 'strategies');
  const names = Object.keys(strategies);
  if (names.length === 0) {
    throw new InvalidLockOptionsError('strategies', 'register at least one strategy, e.g. `strategies: { default: new InMemoryLockStrategy() }`.');
  }
  for (const name of names) {
    if (!STRATEGY_NAME.test(name)) {
      throw new InvalidLockOptionsError(`strategies.${name}`, 'a strategy name starts with a letter and has at most 64 letters, digits, ".", "_" or "-".');
    }
    if (!isLockStrategy(strategies[name])) {
      throw new InvalidLockOptionsError(
        `strategies.${name}`,
        `expected a LockStrategy (an object with name, capabilities, tryAcquire, release, extend, close), got ${describe(strategies[name])}.`,
      );
    }
  }
  // Several strategies and none named "default": there is no default, and whatever locks without naming a
  // strategy fails, naming itself (StrategyNotRegisteredError), rather than the module naming an option here.
  const given = options.defaultStrategy;
  if (given !== undefined && (typeof given !== 'string' || !names.includes(given))) {
    throw new InvalidLockOptionsError(
      'defaultStrategy',
      `${describe(given)} is not one of the registered strategies (${names.join(', ')}). Name one of them, or register one as "default".`,
    );
  }
  const defaultStrategy = given ?? (names.includes(DEFAULT_STRATEGY_NAME) ? DEFAULT_STRATEGY_NAME : names.length === 1 ? names[0] : undefined);
  if (options.keyPrefix !== undefined) validateLockKey(options.keyPrefix, 'keyPrefix', true);
  if (options.operationTimeout !== undefined) assertDuration(options.operationTimeout, 'operationTimeout', 1);
  assertInstanceName(options.instanceName);
  if (options.logEvents !== undefined && typeof options.logEvents !== 'boolean') {
    throw new InvalidLockOptionsError('logEvents', `expected true or false, got ${describe(options.logEvents)}.`);
  }
  if (options.logKeys !== undefined && !LOG_KEYS.includes(options.logKeys as LogKeys)) {
    throw new InvalidLockOptionsError('logKeys', `expected 'plain' or 'hashed', got ${describe(options.logKeys)}.`);
  }
  const defaults = validateAcquireOptions(options.defaults, 'defaults');
  if (defaults.signal !== undefined) {
    throw new InvalidLockOptionsError('defaults.signal', 'a signal belongs to one acquisition, not to module defaults.');
  }
  validateTelemetryOption(options.telemetry);
  return { ...(options as unknown as DistributedLockModuleOptions), defaultStrategy };
}

/**
 * The module's `telemetry` as options: undefined when it is off (absent or false), `{}` for true.
 * Throws `InvalidLockOptionsError` for a bad value.
 */
export function validateTelemetryOption(input: unknown): DistributedLockTelemetryOptions | undefined {
  if (input === undefined || input === false) return undefined;
  if (input === true) return {};
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new InvalidLockOptionsError('telemetry', `expected true, false or telemetry options, got ${describe(input)}.`);
  }
  validateOpenTelemetryOptions(input, 'telemetry', TELEMETRY_KEYS);
  const { openTelemetry, observe } = input as Record<string, unknown>;
  for (const [name, value] of [['openTelemetry', openTelemetry], ['observe', observe]] as const) {
    if (value !== undefined && typeof value !== 'boolean') throw new InvalidLockOptionsError(`telemetry.${name}`, `expected true or false, got ${describe(value)}.`);
  }
  if (openTelemetry === false && observe === false) {
    throw new InvalidLockOptionsError('telemetry', 'openTelemetry and observe are both false, so nothing would be reported; set `telemetry: false` instead.');
  }
  return input as DistributedLockTelemetryOptions;
}

/** Checks `forFeature` options when the module is declared. */
export function validateFeatureOptions(options: unknown): DistributedLockFeatureOptions {
  if (options === undefined) return {};
  assertKnownKeys(options, FEATURE_KEYS, 'forFeature options');
  if (options.strategy !== undefined && (typeof options.strategy !== 'string' || !STRATEGY_NAME.test(options.strategy))) {
    throw new InvalidLockOptionsError('strategy', `expected a registered strategy name, got ${describe(options.strategy)}.`);
  }
  if (options.keyPrefix !== undefined) validateLockKey(options.keyPrefix, 'keyPrefix', true);
  validateAcquireOptions(options.defaults, 'defaults');
  if (options.elections !== undefined) {
    if (!Array.isArray(options.elections)) throw new InvalidLockOptionsError('elections', `expected an array of names or election options, got ${describe(options.elections)}.`);
    const names = new Set<string>();
    for (const [index, entry] of (options.elections as unknown[]).entries()) {
      const { name } = validateLeaderElectionOptions(typeof entry === 'string' ? { name: entry } : entry, `elections[${index}]`);
      if (names.has(name)) throw new InvalidLockOptionsError(`elections[${index}]`, `the election "${name}" is listed twice.`);
      names.add(name);
    }
  }
  return options as DistributedLockFeatureOptions;
}

import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { assertKnownKeys, describe } from '../locking/lock-options';

/**
 * How a lock's key appears on its spans (never on metrics, where every key would be a series of its own).
 * Keys can carry user data ("cart:alice@example.com").
 * - `hashed`: `lock.key.hash`, the first 16 hex digits of the key's SHA-256: spans of one key can be found
 *   together, the key is not written out. It hides a key from reading, not from guessing: omit keys that
 *   are secrets.
 * - `plain`: `lock.key`, the key as it is.
 * - `omit`: no key attribute.
 * - a function: `lock.key` is what it returns for the key, e.g. `(key) => key.replace(/:\d+$/, ':{id}')`.
 */
export type LockKeyAttribute = 'hashed' | 'plain' | 'omit' | ((key: string) => string);

/** The part of an OpenTelemetry `TracerProvider` the library calls (structurally that of `@opentelemetry/api`). */
export interface TelemetryTracerProvider {
  getTracer(name: string, version?: string): object;
}

/** The part of an OpenTelemetry `MeterProvider` the library calls (structurally that of `@opentelemetry/api`). */
export interface TelemetryMeterProvider {
  getMeter(name: string, version?: string): object;
}

/** Options of `OpenTelemetryLockObserver` (and of the Nest module's `telemetry`). */
export interface OpenTelemetryLockObserverOptions {
  /**
   * Where spans go. Default: the global tracer provider of `@opentelemetry/api` (the one your SDK
   * registered; spans started before it is registered are dropped).
   */
  readonly tracerProvider?: TelemetryTracerProvider;
  /**
   * Where metrics go. Default: the global meter provider of `@opentelemetry/api`, as it is when the observer
   * is created: register your SDK before you create the application.
   */
  readonly meterProvider?: TelemetryMeterProvider;
  /** How keys appear on spans. Default "hashed". */
  readonly key?: LockKeyAttribute;
}

export const OPEN_TELEMETRY_OPTION_KEYS = ['tracerProvider', 'meterProvider', 'key'] as const;

/** Checks the observer's options; throws `InvalidLockOptionsError` naming the option under `path`. */
export function validateOpenTelemetryOptions(input: unknown, path: string, allowed: readonly string[] = OPEN_TELEMETRY_OPTION_KEYS): OpenTelemetryLockObserverOptions {
  if (input === undefined) return {};
  assertKnownKeys(input, allowed, path);
  const { tracerProvider, meterProvider, key } = input;
  if (tracerProvider !== undefined && typeof (tracerProvider as Partial<TelemetryTracerProvider> | null)?.getTracer !== 'function') {
    throw new InvalidLockOptionsError(`${path}.tracerProvider`, `expected an OpenTelemetry TracerProvider (with getTracer), got ${describe(tracerProvider)}.`);
  }
  if (meterProvider !== undefined && typeof (meterProvider as Partial<TelemetryMeterProvider> | null)?.getMeter !== 'function') {
    throw new InvalidLockOptionsError(`${path}.meterProvider`, `expected an OpenTelemetry MeterProvider (with getMeter), got ${describe(meterProvider)}.`);
  }
  if (key !== undefined && key !== 'hashed' && key !== 'plain' && key !== 'omit' && typeof key !== 'function') {
    throw new InvalidLockOptionsError(`${path}.key`, `expected "hashed", "plain", "omit" or a function of the key, got ${describe(key)}.`);
  }
  return input as OpenTelemetryLockObserverOptions;
}

import { applyDecorators, SetMetadata } from '@nestjs/common';
import type { PermitOptions } from '../../locking/permit-options';
import { LIMITED_METADATA } from '../distributed-lock.constants';

/** Options of `@Limited`: permit options (no signal: the call has none) and the strategy to use. */
export interface LimitedOptions extends Omit<PermitOptions, 'signal'> {
  /** Strategy name; default: the module's `forFeature` strategy, else the application default. */
  readonly strategy?: string;
}

/** What `@Limited` records; read by the explorer. */
export interface LimitedMetadata {
  readonly key: string | ((...args: readonly unknown[]) => string);
  readonly options: LimitedOptions;
}

/**
 * Runs the decorated provider method while holding a permit of a counting semaphore: at most `permits`
 * calls run at once across every instance of the application; the others wait (FIFO where the strategy's
 * semaphores are), up to `waitTimeout`. The permit is given back when the method settles.
 *
 * `key` is one semaphore: a template resolved from the arguments (`'payments'`, `'export:{0.tenantId}'`)
 * or a function typed by the method's parameters. Inside, `currentPermit()` returns the permit (fencing
 * token, lost signal). Bad options, an unknown strategy, or a strategy without semaphores fail at
 * bootstrap, naming `Class#method`.
 *
 * @example
 * ＠Limited('payments:{0}', { permits: 5, waitTimeout: 2_000 })
 * async charge(provider: string, order: Order) { ... }
 */
export function Limited(key: string, options: LimitedOptions): MethodDecorator;
/** With a key function: the function's parameters must match the decorated method's. */
export function Limited<A extends unknown[]>(
  key: (...args: A) => string,
  options: LimitedOptions,
): <M extends (...args: A) => unknown>(target: object, propertyKey: string | symbol, descriptor: TypedPropertyDescriptor<M>) => void;
export function Limited(key: string | ((...args: never[]) => string), options: LimitedOptions): MethodDecorator {
  const metadata: LimitedMetadata = { key: key as LimitedMetadata['key'], options };
  return applyDecorators(SetMetadata(LIMITED_METADATA, metadata));
}

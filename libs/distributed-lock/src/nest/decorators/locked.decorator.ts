import { applyDecorators, SetMetadata } from '@nestjs/common';
import type { LockKeySource } from '../../locking/key-template';
import type { AcquireOptions } from '../../locking/lock-options';
import { LOCKED_METADATA } from '../distributed-lock.constants';

/** Options of `@Locked`: acquisition options (no signal: the call has none) and the strategy to use. */
export interface LockedOptions extends Omit<AcquireOptions, 'signal'> {
  /** Strategy name; default: the module's `forFeature` strategy, else the application default. */
  readonly strategy?: string;
}

/** What `@Locked` records; read by the explorer. */
export interface LockedMetadata {
  readonly key: LockKeySource<readonly unknown[]>;
  readonly options: LockedOptions;
}

/**
 * Runs the decorated provider method while holding a lock, released when the method settles.
 *
 * `key` is a template resolved from the arguments (`'stock:{0}'`, `'order:{0.userId}'`), an array of
 * templates (taken in sorted order), or a function typed by the method's parameters. The method can read
 * its lock with `currentLock()` (fencing token, lost signal). Nested locked calls on the same key re-enter.
 *
 * @example
 * ＠Locked('stock:{0}', { waitTimeout: 2_000 })
 * async buy(sku: string, quantity: number) { ... }
 */
export function Locked(key: string | readonly string[], options?: LockedOptions): MethodDecorator;
/** With a key function: the function's parameters must match the decorated method's. */
export function Locked<A extends unknown[]>(
  key: (...args: A) => string | readonly string[],
  options?: LockedOptions,
): <M extends (...args: A) => unknown>(target: object, propertyKey: string | symbol, descriptor: TypedPropertyDescriptor<M>) => void;
export function Locked(key: LockKeySource<never[]>, options: LockedOptions = {}): MethodDecorator {
  const metadata: LockedMetadata = { key: key as LockKeySource<readonly unknown[]>, options };
  return applyDecorators(SetMetadata(LOCKED_METADATA, metadata));
}

import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import { LockAssertionError } from '../../errors/lock-assertion.error';
import type { ScheduledLockOptions } from '../../scheduling/scheduled-lock-options';
import { SCHEDULED_LOCK_METADATA } from '../distributed-lock.constants';
import { copyMethodMetadata } from '../explorer/copy-method-metadata';

/** Options of `@ScheduledLock`: the scheduled-lock options and the strategy to lock with. */
export interface ScheduledLockDecoratorOptions extends ScheduledLockOptions {
  /** Strategy name; default: the module's `forFeature` strategy, else the application default. */
  readonly strategy?: string;
}

/** What `@ScheduledLock` records; read by the explorer. */
export interface ScheduledLockMetadata {
  readonly options: ScheduledLockDecoratorOptions;
  /** The method as written, which the explorer wraps. */
  readonly method: (this: unknown, ...args: unknown[]) => unknown;
  /** Name of the class that declares the method, for the default lock name `Class.method`. */
  readonly className: string;
  readonly methodName: string;
}

type AnyMethod = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Runs a `@Cron`, `@Interval` or `@Timeout` method (from `@nestjs/schedule`) at most once per cluster per
 * fire: the instance that takes the job's lock runs it, the others skip that fire (logged at debug level
 * and emitted as `skipped` on `ScheduledLockEvents`). The lock lasts `lockAtMostFor` at most and at
 * least `lockAtLeastFor`; with `perRun`, one lock per fire time. Inside the job, `currentLock()` and
 * `assertLocked()` see the lock. Either decorator order works.
 *
 * Unlike `@Locked`, this decorator puts a small dispatcher in place of the method at once, whose metadata
 * (`@Cron`'s included) is the method's: `@nestjs/schedule` takes the method from the instance in its own
 * `onModuleInit`, which may run before `DistributedLockModule` wraps it, and the dispatcher sends every
 * call to the wrapped method all the same. Called before the application wrapped it (the module not
 * imported, the app not initialised), it rejects with `LockAssertionError` instead of running unlocked.
 *
 * @example
 * ＠Cron(CronExpression.EVERY_MINUTE)
 * ＠ScheduledLock({ lockAtMostFor: 50_000, lockAtLeastFor: 5_000 })
 * async sendReminders() { ... }
 */
export function ScheduledLock(options: ScheduledLockDecoratorOptions): MethodDecorator {
  return (target: object, propertyKey: string | symbol, descriptor: PropertyDescriptor) => {
    const method: unknown = descriptor.value;
    const className = (typeof target === 'function' ? target : target.constructor).name;
    const methodName = String(propertyKey);
    if (typeof method !== 'function') {
      throw new InvalidLockOptionsError(`${className}#${methodName}`, '@ScheduledLock decorates methods only.');
    }
    const dispatcher = function scheduledLockDispatcher(this: unknown, ...args: unknown[]): unknown {
      const own: unknown = typeof this === 'object' && this !== null ? Object.getOwnPropertyDescriptor(this, propertyKey)?.value : undefined;
      if (typeof own === 'function' && own !== dispatcher) return (own as AnyMethod).apply(this, args);
      return Promise.reject(
        new LockAssertionError(
          options?.name ?? `${className}.${methodName}`,
          `${className}#${methodName} is a @ScheduledLock job, called before DistributedLockModule wrapped it, so it did not run. ` +
            'Import DistributedLockModule.forRoot in the application and initialise it (app.init(), app.listen(), moduleRef.init()); ' +
            'the class must be a singleton provider.',
        ),
      );
    };
    copyMethodMetadata(method, dispatcher);
    const metadata: ScheduledLockMetadata = { options, method: method as AnyMethod, className, methodName };
    Reflect.defineMetadata(SCHEDULED_LOCK_METADATA, metadata, dispatcher);
    descriptor.value = dispatcher;
  };
}

import { DistributedLockError } from './distributed-lock.error';

/**
 * A strategy name was used that no `forRoot` / `forRootAsync` registered, or something locks on the default
 * strategy (it names none) while none is registered as "default".
 */
export class StrategyNotRegisteredError extends DistributedLockError {
  constructor(
    readonly strategy: string,
    readonly registered: readonly string[],
    /** Where it was used, e.g. "InventoryService#buy". */
    readonly usedBy?: string,
    /** True when `usedBy` named no strategy and so asked for the default one. */
    readonly defaultAsked = false,
  ) {
    super(defaultAsked ? noDefaultMessage(registered, usedBy) : unknownMessage(strategy, registered, usedBy));
  }
}

function listed(registered: readonly string[]): string {
  return registered.length ? registered.map((n) => `"${n}"`).join(', ') : 'none';
}

function unknownMessage(strategy: string, registered: readonly string[], usedBy: string | undefined): string {
  return (
    `Lock strategy "${strategy}"${usedBy ? ` used by ${usedBy}` : ''} is not registered. Registered: ${listed(registered)}. ` +
    'Add it to `strategies` in DistributedLockModule.forRoot/forRootAsync, or fix the name.'
  );
}

function noDefaultMessage(registered: readonly string[], usedBy: string | undefined): string {
  const example = registered[0] ?? 'redis';
  return (
    `${usedBy ?? 'A lock'} names no strategy, so it locks on the default one, and no strategy is registered as "default" ` +
    `(registered: ${listed(registered)}). Name one there (@Locked(key, { strategy: "${example}" }), ` +
    `forFeature({ strategy: "${example}" }), @InjectLockService("${example}")), or register one under the name "default".`
  );
}

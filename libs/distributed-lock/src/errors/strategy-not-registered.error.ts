import { DistributedLockError } from './distributed-lock.error';

/** A strategy name was used that no `forRoot` / `forRootAsync` registered. */
export class StrategyNotRegisteredError extends DistributedLockError {
  constructor(
    readonly strategy: string,
    readonly registered: readonly string[],
    /** Where it was used, e.g. "InventoryService#buy". */
    readonly usedBy?: string,
  ) {
    super(
      `Lock strategy "${strategy}"${usedBy ? ` used by ${usedBy}` : ''} is not registered. ` +
        `Registered: ${registered.length ? registered.map((n) => `"${n}"`).join(', ') : 'none'}. ` +
        'Add it to `strategies` in DistributedLockModule.forRoot/forRootAsync, or fix the name.',
    );
  }
}

import { AsyncLocalStorage } from 'node:async_hooks';
import type { PermitHandle } from './permit-handle';

/**
 * The permits held by the current async call chain, innermost last: pushed by `withPermit` / `@Limited`
 * for the duration of the callback. Only for reading (`currentPermit`): permits are never re-entered.
 */
const permitsInChain = new AsyncLocalStorage<ReadonlyArray<{ readonly permit: PermitHandle; readonly unprefixedKey: string }>>();

/** Runs `fn` with `permit` added to the chain's permits. */
export function runWithPermit<T>(permit: PermitHandle, unprefixedKey: string, fn: () => T): T {
  return permitsInChain.run([...(permitsInChain.getStore() ?? []), { permit, unprefixedKey }], fn);
}

/**
 * The innermost permit held by the running call chain (optionally: the one of semaphore `key`, with or
 * without the service's prefix), e.g. to read its fencing token or lost signal inside a `@Limited`
 * method. Undefined outside a `withPermit` section.
 */
export function currentPermit(key?: string): PermitHandle | undefined {
  const chain = permitsInChain.getStore();
  if (!chain) return undefined;
  for (let i = chain.length - 1; i >= 0; i -= 1) {
    const { permit, unprefixedKey } = chain[i];
    if (key === undefined || permit.key === key || unprefixedKey === key) return permit;
  }
  return undefined;
}

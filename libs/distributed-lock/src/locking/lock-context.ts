import { AsyncLocalStorage } from 'node:async_hooks';
import type { LockHandle } from './lock-handle';

/**
 * The locks held by the current async call chain, innermost last. A frame is pushed by `withLock` /
 * `@Locked` for the duration of the callback, so reentrancy follows `await` but never leaks to unrelated
 * requests. Work started in parallel inside a held section (e.g. `Promise.all`) inherits the frame, so it
 * re-enters too: it runs on behalf of the same holder.
 *
 * The storage is stateless between chains; entries are matched by the manager that granted them, so
 * several applications in one process never see each other's locks.
 */
const heldInChain = new AsyncLocalStorage<readonly ChainEntry[]>();

/** One held lock in the chain, with the manager that granted it. */
export interface ChainEntry {
  readonly managerId: symbol;
  readonly handle: LockHandle;
  /** The key as the caller named it, before the service's prefix. */
  readonly unprefixedKey: string;
}

/** Runs `fn` with `entries` added to the chain's held locks. */
export function runWithHeldLocks<T>(entries: readonly ChainEntry[], fn: () => T): T {
  const parent = heldInChain.getStore() ?? [];
  return heldInChain.run([...parent, ...entries], fn);
}

/** The chain's entry for `key` from the given manager, if it still holds it. */
export function findHeldInChain(managerId: symbol, key: string): ChainEntry | undefined {
  const chain = heldInChain.getStore();
  if (!chain) return undefined;
  for (let i = chain.length - 1; i >= 0; i -= 1) {
    const entry = chain[i];
    if (entry.managerId === managerId && entry.handle.key === key && entry.handle.heldLock.isHeld) return entry;
  }
  return undefined;
}

/**
 * The innermost lock held by the running call chain (optionally: the one on `key`), e.g. to read the
 * fencing token or the lost signal inside a `@Locked` method. `key` may be given with or without the
 * service's prefix. Undefined outside a locked section.
 */
export function currentLock(key?: string): LockHandle | undefined {
  const chain = heldInChain.getStore();
  if (!chain) return undefined;
  for (let i = chain.length - 1; i >= 0; i -= 1) {
    const { handle, unprefixedKey } = chain[i];
    if (key === undefined || handle.key === key || unprefixedKey === key) return handle;
  }
  return undefined;
}

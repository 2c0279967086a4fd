import type { LeaseGrant, LockStrategy } from '@app/distributed-lock/strategy-kit';

/** Runs a hook once, after the server answered the next renewal and before the answer is handed on. */
export interface RenewalHook {
  afterNextRenewal(hook: () => void): void;
}

/**
 * `strategy` itself (the real one, against its real server), with its `extend` answering through a hook:
 * where a test freezes the process (a GC pause right then), to see what a renewal that went through on
 * the server, but is heard of only after the freeze, does to the holder.
 */
export function withRenewalHook<S extends LockStrategy>(strategy: S): S & RenewalHook {
  const extend = strategy.extend.bind(strategy);
  let next: (() => void) | undefined;
  return Object.assign(strategy, {
    extend: async (lease: LeaseGrant, ttlMs: number): Promise<LeaseGrant | null> => {
      const renewed = await extend(lease, ttlMs);
      const hook = next;
      next = undefined;
      hook?.();
      return renewed;
    },
    afterNextRenewal: (hook: () => void): void => {
      next = hook;
    },
  });
}

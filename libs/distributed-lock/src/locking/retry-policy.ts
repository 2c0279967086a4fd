import type { RetryOptions } from './lock-options';

/**
 * Delay before the next attempt: exponential growth capped at `maxDelay`, with a random share (`jitter`)
 * removed so that contenders released by the same event do not all come back at the same instant.
 */
export function retryDelay(attempt: number, retry: Required<RetryOptions>, random: () => number = Math.random): number {
  const exponential = Math.min(retry.maxDelay, retry.initialDelay * retry.factor ** Math.min(attempt, 30));
  return Math.max(1, Math.round(exponential * (1 - retry.jitter * random())));
}

import { LockBackendUnavailableError } from './lock-backend-unavailable.error';

/**
 * The lock service was closed (its `close()`, or the application shutting down): nothing is acquired,
 * queried or broken through it any more. A `LockBackendUnavailableError`, as it was before it had a class
 * of its own, so that handlers of that error still catch it; a retry loop tells it apart to stop rather
 * than retry a service that never comes back.
 */
export class LockServiceClosedError extends LockBackendUnavailableError {
  constructor(strategy: string, operation: string, elapsedMs: number, options?: { key?: string }) {
    super(strategy, `${operation} (the lock service is closed)`, elapsedMs, {
      ...options,
      hint: 'The lock service was closed (its close(), or the application shutting down): stop using it, or create a new one.',
    });
  }
}

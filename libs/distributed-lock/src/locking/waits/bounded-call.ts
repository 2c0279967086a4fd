import { DistributedLockError } from '../../errors/distributed-lock.error';
import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { underRegisteredName } from '../bounded-operation';
import type { DeadlineClock } from '../deadline-clock';

/** What a bounded call is, and what becomes of its answer. */
export interface BoundedCall<T, R> {
  readonly clock: DeadlineClock;
  /** The strategy's name in errors. */
  readonly strategy: string;
  readonly operation: string;
  readonly key: string | undefined;
  readonly timeoutMs: number;
  /**
   * The bound is an end in wall time (a lease's end): a stall of the process does not put it off. Default
   * false: the bound counts the time the process ran (`DeadlineClock.bound`).
   */
  readonly wallTime?: boolean;
  run(): Promise<T>;
  /** A result that came after the bound (a grant to give back). */
  onLateResult?(value: T): void;
  /** What the caller gets for the answer (run before the promise settles: no promise of its own). */
  then?(value: T): R | Promise<R>;
  /** What the caller gets for a failure, already typed (see `boundedCall`); default: that failure. */
  catch?(error: DistributedLockError): R | Promise<R>;
}

/**
 * A strategy call bounded on the manager's clock: a server that is down or silent yields
 * `LockBackendUnavailableError` after `timeoutMs` instead of a hang (time the process ran: a process frozen
 * while the answer came does not blame the server, see `DeadlineClock.bound`); errors that are not this
 * library's are wrapped the same way, the driver's error as `cause`. No timer of its own (a deadline on the clock), and
 * two promises in all: the one returned and the strategy's answer's `then`; `then` and `catch` shape the
 * outcome before it settles. The call object is usually the caller itself (a held lock, a wait), so nothing
 * is made per call but the promises.
 */
export function boundedCall<T, R = T>(call: BoundedCall<T, R>): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    const started = performance.now();
    let settled = false;
    const fail = (error: DistributedLockError): void => {
      if (!call.catch) return reject(error);
      try {
        resolve(call.catch(error));
      } catch (thrown) {
        reject(thrown);
      }
    };
    const timedOut = (): void => {
      settled = true;
      fail(new LockBackendUnavailableError(call.strategy, call.operation, Math.round(performance.now() - started), { key: call.key }));
    };
    const bound = call.wallTime ? call.clock.after(call.timeoutMs, timedOut) : call.clock.bound(call.timeoutMs, timedOut);
    let pending: Promise<T>;
    try {
      pending = call.run();
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (value) => {
        if (settled) return call.onLateResult?.(value);
        settled = true;
        bound.cancel();
        if (!call.then) return resolve(value as unknown as R);
        try {
          resolve(call.then(value));
        } catch (error) {
          reject(error);
        }
      },
      (error: unknown) => {
        if (settled) return;
        settled = true;
        bound.cancel();
        fail(
          error instanceof DistributedLockError
            ? underRegisteredName(error, call.strategy)
            : new LockBackendUnavailableError(call.strategy, call.operation, Math.round(performance.now() - started), { key: call.key, cause: error }),
        );
      },
    );
  });
}

/** `boundedCall` for a call that needs nothing but its bound. */
export function simpleBoundedCall<T>(clock: DeadlineClock, strategy: string, operation: string, key: string | undefined, timeoutMs: number, run: () => Promise<T>, onLateResult?: (value: T) => void): Promise<T> {
  return boundedCall<T, T>({ clock, strategy, operation, key, timeoutMs, run, onLateResult });
}

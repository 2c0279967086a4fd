import { DistributedLockError } from './distributed-lock.error';

/** The backend did not answer within the operation timeout, or answered with a connection error. */
export class LockBackendUnavailableError extends DistributedLockError {
  constructor(
    readonly strategy: string,
    /** What was being done: "acquire", "release", "extend", "wait", "close", "ping". */
    readonly operation: string,
    /** Time spent before giving up, in ms. */
    readonly elapsedMs: number,
    /** `hint`: what to do, where it is not the server (a shortage of connections in this process). */
    options?: { cause?: unknown; key?: string; hint?: string },
  ) {
    const detail = options?.cause instanceof Error ? `: ${options.cause.message}` : '';
    super(
      `Strategy "${strategy}" could not ${operation}${options?.key ? ` "${options.key}"` : ''} within ${elapsedMs} ms${detail}. ` +
        (options?.hint ?? 'Check that the server is up and reachable, or raise `operationTimeout`.'),
      options,
    );
    this.key = options?.key;
    this.hint = options?.hint;
  }
  /** What to do, when it is not the server (see the constructor's `hint`); kept when the error is re-named. */
  readonly hint: string | undefined;
  /** The lock key involved, when there was one. */
  readonly key: string | undefined;
}

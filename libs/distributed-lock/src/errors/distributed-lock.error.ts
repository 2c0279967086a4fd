/**
 * Base class of every error this library throws. `name` is the concrete class name, and `cause`
 * keeps the underlying error (a driver error, or the original failure when cleanup also failed).
 */
export class DistributedLockError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

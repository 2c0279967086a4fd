import { InvalidLockOptionsError } from './invalid-lock-options.error';

/** A lock key is empty, too long, contains forbidden characters, or a key template could not be resolved. */
export class InvalidLockKeyError extends InvalidLockOptionsError {
  constructor(
    /** The offending key or template, shortened for the message. */
    readonly key: string,
    problem: string,
  ) {
    super('key', `${problem} (got ${JSON.stringify(key.length > 80 ? `${key.slice(0, 80)}…` : key)})`);
  }
}

import { DistributedLockError } from './distributed-lock.error';

/** A strategy's client library is not installed (backend clients are optional peer dependencies). */
export class MissingPeerDependencyError extends DistributedLockError {
  constructor(
    readonly packageName: string,
    readonly strategy: string,
    options?: { cause?: unknown },
  ) {
    super(
      `The ${strategy} strategy needs the "${packageName}" package, which is not installed. ` +
        `Run \`npm install ${packageName}\` in your application.`,
      options,
    );
  }
}

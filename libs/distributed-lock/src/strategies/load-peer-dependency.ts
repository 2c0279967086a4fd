import { MissingPeerDependencyError } from '../errors/missing-peer-dependency.error';

/**
 * Loads a backend client package at the moment a strategy needs it. Clients are optional peer
 * dependencies: a user installs only the driver of the strategy they use, and a missing one gives a
 * `MissingPeerDependencyError` that names the package to install instead of a bare "Cannot find module".
 */
export function loadPeerDependency<T>(packageName: string, strategy: string, load: (name: string) => unknown = require): T {
  try {
    return load(packageName) as T;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const missingItself = code === 'MODULE_NOT_FOUND' && String((error as Error).message).includes(`'${packageName}'`);
    if (missingItself) throw new MissingPeerDependencyError(packageName, strategy, { cause: error });
    throw error;
  }
}

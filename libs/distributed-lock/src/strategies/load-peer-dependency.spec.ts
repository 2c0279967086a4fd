import { MissingPeerDependencyError } from '../errors/missing-peer-dependency.error';
import { loadPeerDependency } from './load-peer-dependency';

describe('loadPeerDependency', () => {
  it('names the package to install when it is missing', () => {
    const error = (() => {
      try {
        loadPeerDependency('surely-not-installed-lock-driver', 'redis');
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(MissingPeerDependencyError);
    expect((error as MissingPeerDependencyError).packageName).toBe('surely-not-installed-lock-driver');
    expect((error as Error).message).toContain('npm install surely-not-installed-lock-driver');
  });

  it('returns the module when it is installed', () => {
    expect(loadPeerDependency<typeof import('node:path')>('node:path', 'test').join('a', 'b')).toBe('a/b');
  });

  it('does not hide a failure inside an installed package', () => {
    const failing = (): unknown => {
      throw Object.assign(new Error("Cannot find module 'inner-dependency'"), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => loadPeerDependency('outer-package', 'test', failing)).toThrow(/inner-dependency/);
  });
});

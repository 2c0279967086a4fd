import { spawnSync } from 'node:child_process';

/** Debian packages that provide the test servers. */
export const SERVER_PACKAGES = ['redis-server', 'mariadb-server', 'zookeeper', 'etcd-server', 'etcd-client', 'memcached', 'postgresql'] as const;

function installed(pkg: string): boolean {
  const result = spawnSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8' });
  return result.status === 0 && result.stdout.includes('install ok installed');
}

/**
 * Installs the missing server packages with apt (root only), once. Without root, or without apt, it
 * fails with the command a person should run. Returns the packages it installed.
 */
export function ensureDebianPackages(packages: readonly string[] = SERVER_PACKAGES, log: (line: string) => void = console.log): string[] {
  const missing = packages.filter((pkg) => !installed(pkg));
  if (missing.length === 0) return [];
  const command = `apt-get install -y ${missing.join(' ')}`;
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    throw new Error(`Test servers missing: ${missing.join(', ')}. Install them as root: sudo ${command}`);
  }
  log(`[services] installing ${missing.join(', ')} with apt-get (once per machine)…`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const update = spawnSync('apt-get', ['update', '-qq'], { env, stdio: 'inherit' });
  if (update.status !== 0) throw new Error(`apt-get update failed (exit ${update.status}); run: ${command}`);
  const install = spawnSync('apt-get', ['install', '-y', '-qq', ...missing], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  if (install.status !== 0) throw new Error(`apt-get install failed (exit ${install.status}); run: ${command}`);
  return missing;
}

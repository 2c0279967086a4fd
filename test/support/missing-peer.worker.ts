// Constructs a strategy while its client package cannot be resolved, as in an application that did not
// install it. Usage: missing-peer.worker <package> <strategy>. Prints the error's class and message as JSON.
import Module from 'node:module';

const [hidden, strategy] = process.argv.slice(2);
type Resolve = (request: string, ...rest: unknown[]) => string;
const moduleWithResolve = Module as unknown as { _resolveFilename: Resolve };
const resolveFilename = moduleWithResolve._resolveFilename;
moduleWithResolve._resolveFilename = function (request: string, ...rest: unknown[]): string {
  if (request === hidden || request.startsWith(`${hidden}/`)) {
    throw Object.assign(new Error(`Cannot find module '${request}'`), { code: 'MODULE_NOT_FOUND' });
  }
  return resolveFilename.call(this, request, ...rest);
};

async function main(): Promise<void> {
  try {
    if (strategy === 'redis') {
      const { RedisLockStrategy } = await import('@app/distributed-lock/strategies/redis');
      new RedisLockStrategy({ connection: 'redis://127.0.0.1:1' });
    } else if (strategy === 'etcd') {
      const { EtcdLockStrategy } = await import('@app/distributed-lock/strategies/etcd');
      new EtcdLockStrategy({ connection: { hosts: 'http://127.0.0.1:1' } });
    } else if (strategy === 'memcached') {
      const { MemcachedLockStrategy } = await import('@app/distributed-lock/strategies/memcached');
      new MemcachedLockStrategy({ connection: '127.0.0.1:1' });
    } else if (strategy === 'zookeeper') {
      const { ZooKeeperLockStrategy } = await import('@app/distributed-lock/strategies/zookeeper');
      // At construction, like the others (it used to say so only at the first lock).
      new ZooKeeperLockStrategy({ connect: '127.0.0.1:1' });
    } else if (strategy === 'postgres') {
      // The database driver, not TypeORM: TypeORM's own error for it is DriverPackageNotInstalledError.
      const { AdvisoryLockStrategy } = await import('@app/distributed-lock/strategies/database');
      new AdvisoryLockStrategy({ connection: { type: 'postgres', url: 'postgres://u:p@127.0.0.1:1/db' } });
    } else if (strategy === 'mysql') {
      const { PessimisticLockStrategy } = await import('@app/distributed-lock/strategies/database');
      new PessimisticLockStrategy({ connection: { type: 'mysql', url: 'mysql://u:p@127.0.0.1:1/db' } });
    } else {
      const { RowLockStrategy } = await import('@app/distributed-lock/strategies/database');
      new RowLockStrategy({ connection: { type: 'mysql', url: 'mysql://u:p@127.0.0.1:1/db' } });
    }
    process.stdout.write(JSON.stringify({ name: 'none' }));
  } catch (error) {
    process.stdout.write(JSON.stringify({ name: (error as Error).constructor.name, message: (error as Error).message }));
  }
}

void main();

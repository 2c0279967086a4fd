import { loadPeerDependency } from '../load-peer-dependency';

/**
 * How long a PostgreSQL connection that a strategy's own pool opens may take to connect, unless the options
 * set a bound: pg has none, and a connect to a server that never answers would keep the process alive after
 * close() for good (a pool still opening is out of the close's reach). mysql2's default is the same 10 s.
 */
export const PG_CONNECT_TIMEOUT_MS = 10_000;

/** pg's `Client` class, as pg-pool makes each connection with it (its `Client` option). */
type PgClientClass = new (config?: Record<string, unknown>) => object;

const boundedClasses = new WeakMap<PgClientClass, PgClientClass>();

/** Whether pg-native is installed: TypeORM then uses pg's native bindings, whose client is another class. */
function pgNativeInstalled(): boolean {
  try {
    require.resolve('pg-native');
    return true;
  } catch {
    return false;
  }
}

/**
 * pg's `Client`, whose connect gives up after PG_CONNECT_TIMEOUT_MS when its options set no bound: for
 * pg-pool's `Client` option (TypeORM passes `extra` on to the pool). Not `connectTimeoutMS`: TypeORM hands
 * that to pg-pool as `connectionTimeoutMillis`, which also bounds the wait for a free connection of a full
 * pool, a wait that the acquisition's own `waitTimeout` bounds (docs/strategies/database.md). Undefined
 * where TypeORM would use pg-native (installed): its client is left as it is.
 */
export function connectBoundedPgClient(strategy: string): PgClientClass | undefined {
  if (pgNativeInstalled()) return undefined;
  const { Client } = loadPeerDependency<{ Client: PgClientClass }>('pg', strategy);
  let bounded = boundedClasses.get(Client);
  if (bounded === undefined) {
    bounded = class ConnectBoundedClient extends Client {
      constructor(config?: Record<string, unknown>) {
        super({ ...config, connectionTimeoutMillis: config?.connectionTimeoutMillis || PG_CONNECT_TIMEOUT_MS });
      }
    };
    boundedClasses.set(Client, bounded);
  }
  return bounded;
}

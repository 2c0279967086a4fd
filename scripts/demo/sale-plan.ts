import type { TopologyName } from '../services';
import type { DemoDatabase, DemoLockStrategy } from '../../apps/demo-inventory/src/config/demo-config';

/** One sale of the demo: how purchases are guarded, over which database and servers. */
export interface SaleRun {
  /** Name in the table and in `--strategies`. */
  readonly name: string;
  readonly mode: 'unguarded' | 'atomic' | 'locked' | 'optimistic' | 'pessimistic';
  readonly database: DemoDatabase;
  readonly inventoryLock: DemoLockStrategy;
  readonly topologies: readonly TopologyName[];
}

/**
 * Every run the demo knows. The first four need no server: SQLite holds the data and the lock table.
 * `atomic` is the reference: the correct answer with no lock at all (a conditional UPDATE).
 */
export const SALE_RUNS: readonly SaleRun[] = [
  { name: 'unguarded', mode: 'unguarded', database: 'sqlite', inventoryLock: 'row', topologies: [] },
  { name: 'atomic', mode: 'atomic', database: 'sqlite', inventoryLock: 'row', topologies: [] },
  { name: 'row', mode: 'locked', database: 'sqlite', inventoryLock: 'row', topologies: [] },
  { name: 'optimistic', mode: 'optimistic', database: 'sqlite', inventoryLock: 'row', topologies: [] },
  { name: 'row-mysql', mode: 'locked', database: 'mysql', inventoryLock: 'row', topologies: ['mariadb'] },
  { name: 'pessimistic', mode: 'pessimistic', database: 'mysql', inventoryLock: 'row', topologies: ['mariadb'] },
  { name: 'optimistic-mysql', mode: 'optimistic', database: 'mysql', inventoryLock: 'row', topologies: ['mariadb'] },
  { name: 'atomic-mysql', mode: 'atomic', database: 'mysql', inventoryLock: 'row', topologies: ['mariadb'] },
  { name: 'redis', mode: 'locked', database: 'mysql', inventoryLock: 'redis', topologies: ['mariadb', 'redis'] },
  { name: 'redlock', mode: 'locked', database: 'mysql', inventoryLock: 'redlock', topologies: ['mariadb', 'redis5'] },
  { name: 'zookeeper', mode: 'locked', database: 'mysql', inventoryLock: 'zookeeper', topologies: ['mariadb', 'zookeeper'] },
  { name: 'etcd', mode: 'locked', database: 'mysql', inventoryLock: 'etcd', topologies: ['mariadb', 'etcd'] },
  { name: 'advisory-mysql', mode: 'locked', database: 'mysql', inventoryLock: 'advisory', topologies: ['mariadb'] },
  // `--db postgres`: every database strategy on PostgreSQL.
  { name: 'row-postgres', mode: 'locked', database: 'postgres', inventoryLock: 'row', topologies: ['postgres'] },
  { name: 'advisory-postgres', mode: 'locked', database: 'postgres', inventoryLock: 'advisory', topologies: ['postgres'] },
  { name: 'pessimistic-postgres', mode: 'pessimistic', database: 'postgres', inventoryLock: 'row', topologies: ['postgres'] },
  { name: 'optimistic-postgres', mode: 'optimistic', database: 'postgres', inventoryLock: 'row', topologies: ['postgres'] },
  { name: 'atomic-postgres', mode: 'atomic', database: 'postgres', inventoryLock: 'row', topologies: ['postgres'] },
];

export const EMBEDDED_RUNS = ['unguarded', 'atomic', 'row', 'optimistic'];

/**
 * `--strategies all`, a comma list of run names, or the embedded default. `--db sqlite|mysql|postgres`
 * keeps the runs on that database; alone, it means every run on it (`--db postgres`: every database
 * strategy on PostgreSQL).
 */
export function planRuns(selection: string | undefined, database?: string): SaleRun[] {
  if (database !== undefined && !DATABASES.includes(database)) throw new Error(`unknown database ${database}; choose ${DATABASES.join(', ')}`);
  const runs = database ? selectRuns(selection ?? 'all').filter((run) => run.database === database) : selectRuns(selection);
  if (runs.length === 0) throw new Error(`no demo run of ${selection} is on ${database}`);
  return runs;
}

const DATABASES: readonly string[] = ['sqlite', 'mysql', 'postgres'] satisfies readonly DemoDatabase[];

function selectRuns(selection: string | undefined): SaleRun[] {
  if (!selection) return SALE_RUNS.filter((run) => EMBEDDED_RUNS.includes(run.name));
  if (selection === 'all') return [...SALE_RUNS];
  const names = selection.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !SALE_RUNS.some((run) => run.name === name));
  if (unknown.length) throw new Error(`unknown strategy ${unknown.join(', ')}; choose from ${SALE_RUNS.map((r) => r.name).join(', ')} or "all"`);
  return SALE_RUNS.filter((run) => names.includes(run.name));
}

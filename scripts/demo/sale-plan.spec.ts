import { planRuns, SALE_RUNS } from './sale-plan';

describe('demo sale plan', () => {
  it('--db postgres alone runs every database strategy on PostgreSQL, and only there', () => {
    const runs = planRuns(undefined, 'postgres');
    expect(runs.map((run) => run.name)).toEqual(['row-postgres', 'advisory-postgres', 'pessimistic-postgres', 'optimistic-postgres', 'atomic-postgres']);
    expect(runs.every((run) => run.database === 'postgres' && run.topologies.every((topology) => topology === 'postgres'))).toBe(true);
  });

  it('--db keeps the selected runs on that database, and refuses a selection with none there or an unknown database', () => {
    expect(planRuns('row-mysql,row-postgres', 'postgres').map((run) => run.name)).toEqual(['row-postgres']);
    expect(() => planRuns('row-mysql', 'postgres')).toThrow(/no demo run of row-mysql is on postgres/);
    expect(() => planRuns(undefined, 'oracle')).toThrow(/unknown database oracle/);
  });

  it('without --db: the embedded runs, all of them, or the named ones', () => {
    expect(planRuns(undefined).every((run) => run.database === 'sqlite')).toBe(true);
    expect(planRuns('all')).toHaveLength(SALE_RUNS.length);
    expect(planRuns('advisory-mysql').map((run) => run.inventoryLock)).toEqual(['advisory']);
  });
});

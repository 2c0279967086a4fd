import { randomUUID } from 'node:crypto';
import { EntitySchema, type DataSourceOptions } from 'typeorm';
import { initializeDataSource } from '../support/initialize-data-source';

// Test files synchronize the same fixture entities in parallel on one server. On a fresh server (every CI
// run) plain `new DataSource(options).initialize()` lost that race in 6 of 20 (MariaDB) and 14 of 20
// (PostgreSQL) data sources started 4 at a time ("Table 'fixture_stock' already exists" failed a file).
// `initializeDataSource`, which every data source of the tests goes through, must win it every time.
const servers: ReadonlyArray<readonly [string, () => DataSourceOptions]> = [
  ['MariaDB', () => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 2 })],
  ['PostgreSQL', () => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, poolSize: 2 })],
];

describe('Data sources of the tests that synchronize the same new table at once', () => {
  for (const [server, options] of servers) {
    it(`${server}: 4 at once, 5 times, on a table nobody made yet: every one initialises`, async () => {
      for (let round = 0; round < 5; round += 1) {
        const table = `race_${randomUUID().slice(0, 8)}`;
        const entity = new EntitySchema({ name: table, columns: { id: { type: Number, primary: true }, qty: { type: Number } } });
        const started = await Promise.allSettled([0, 1, 2, 3].map(() => initializeDataSource({ ...options(), entities: [entity], synchronize: true } as DataSourceOptions)));
        const ready = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
        await ready[0]?.query(`DROP TABLE IF EXISTS ${table}`);
        await Promise.all(ready.map((dataSource) => dataSource.destroy()));
        expect(started.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
      }
    }, 60_000);
  }
});

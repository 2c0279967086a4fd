// Row tables of the pessimistic strategy whose names differ only after their 55th character (a name
// with its fencing table's "_fences" must fit the servers' 63-character identifiers). Each table's locks
// are its own, so one key can be held in both at once; each must keep its own fencing table too. When the
// two shared one, the second grant wrote its owner over the first's row, and `query` on the first table
// could no longer name its holder.
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { LockManager, LockService } from '@app/distributed-lock';
import { PessimisticLockStrategy } from '@app/distributed-lock/strategies/database';

const run = randomUUID().slice(0, 8);
// 55 characters in common, then one that differs, if only in case (both servers keep case here: MariaDB's
// lower_case_table_names is 0 on Linux, PostgreSQL's quoted names keep theirs).
const stem = `zz_fence_names_${run}_`.padEnd(55, 'x');
const tables = [`${stem}_a`, `${stem}_b`, `${stem}_A`];

const cases = [
  { name: 'MariaDB with holders', connection: (): DataSourceOptions => ({ type: 'mysql', url: process.env.LOCK_TEST_MYSQL_URL, poolSize: 3 }), holders: true },
  { name: 'PostgreSQL', connection: (): DataSourceOptions => ({ type: 'postgres', url: process.env.LOCK_TEST_POSTGRES_URL, poolSize: 3 }), holders: undefined },
];

describe.each(cases)('pessimistic row tables whose names share their first 55 characters: $name', ({ connection, holders }) => {
  it('each table names its own holder and token for a key held in both', async () => {
    const managers = tables.map((table, index) => new LockManager(new PessimisticLockStrategy({ connection: connection(), name: `fence-names-${index}`, table, holders })));
    const services = managers.map((manager) => new LockService(manager));
    const admin = new DataSource(connection());
    const key = `fence-names:${run}`;
    try {
      const locks = [];
      for (const service of services) locks.push(await service.acquire(key, { ttl: 30_000 }));
      for (const [index, service] of services.entries()) {
        const { held } = await service.query(key);
        expect(held.map((holder) => ({ owner: holder.owner.id, token: holder.fencingToken }))).toEqual([{ owner: locks[index].owner, token: locks[index].fencingToken }]);
      }
      for (const lock of locks) await lock.release();
    } finally {
      await Promise.all(managers.map((manager) => manager.close()));
      await admin.initialize();
      const names = await admin.query(connection().type === 'mysql'
        ? 'SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ?'
        : "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE $1", [`zz_fence_names_${run}%`]) as Array<{ name: string }>;
      for (const { name } of names) await admin.query(`DROP TABLE ${connection().type === 'mysql' ? `\`${name}\`` : `"${name}"`}`);
      await admin.destroy();
    }
  }, 30_000);
});

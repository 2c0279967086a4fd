import { DataSource } from 'typeorm';
import { SQL_DIALECTS } from './sql-dialect';

describe('the SQLite dialect', () => {
  it('reads its clock in whole ms exactly: now, and a timestamp of now read back, are the same ms', async () => {
    // SQLite's clock is in whole ms and one statement sees one instant. julianday's floating point gives
    // x.9999… for about half of them, which a bare CAST would cut to the ms before.
    const db = new DataSource({ type: 'better-sqlite3', database: ':memory:' });
    await db.initialize();
    try {
      const sqlite = SQL_DIALECTS.sqlite;
      const read = `SELECT ${sqlite.nowMs} AS now_ms, ${sqlite.epochMs(sqlite.nowTimestamp)} AS stamp_ms`;
      let differing = 0;
      for (let i = 0; i < 5_000; i += 1) {
        const [{ now_ms, stamp_ms }] = (await db.query(read)) as Array<{ now_ms: number; stamp_ms: number }>;
        if (now_ms !== stamp_ms) differing += 1;
      }
      expect(differing).toBe(0);
    } finally {
      await db.destroy();
    }
  });
});

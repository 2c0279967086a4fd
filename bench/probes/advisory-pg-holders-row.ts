// What naming the holder would cost the advisory strategy on PostgreSQL, where nothing is written per grant
// today (the token comes from a sequence): the strategy's grant statement as it is, against the same
// statement with an upsert of the holder (key, backend pid, owner id, token, time) into an UNLOGGED table in
// a data-modifying CTE, the design `query` would read beside pg_locks. Both sent raw on one pg connection as
// named statements (as the strategy sends them), in alternating rounds of the same length, each section
// followed by pg_advisory_unlock, uncontended. Also reports how many of the upserts were HOT updates.
// Usage: node -r @swc-node/register bench/probes/advisory-pg-holders-row.ts [rounds] [ms per round]
// Writes bench/results/advisory-pg-holders-row.md.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { advisoryDdl, advisoryStatements } from '../../libs/distributed-lock/src/strategies/database/advisory-lock.sql';
import { fenceTableDdl } from '../../libs/distributed-lock/src/strategies/database/lock-table.sql';
import { SQL_DIALECTS } from '../../libs/distributed-lock/src/strategies/database/sql-dialect';

const SEQUENCE = 'bench_probe_advisory_tokens';
const HOLDERS = 'bench_probe_advisory_holders';
const OWNER = `bench-host:12345:${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`;
const KEY = 4242;

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 6);
  const roundMs = Number(process.argv[3] ?? 2_000);
  const url = process.env.LOCK_TEST_POSTGRES_URL;
  if (!url) throw new Error('LOCK_TEST_POSTGRES_URL is not set (npm run services -- up prints it)');
  const client = new Client({ connectionString: url });
  await client.connect();
  const dialect = SQL_DIALECTS.postgres;
  for (const ddl of advisoryDdl(dialect, { sequence: SEQUENCE, fences: SEQUENCE }, fenceTableDdl)) await client.query(ddl);
  await client.query(`DROP TABLE IF EXISTS ${HOLDERS}`);
  await client.query(`CREATE UNLOGGED TABLE ${HOLDERS} (lock_key BIGINT PRIMARY KEY, pid INTEGER NOT NULL, owner VARCHAR(255) NOT NULL, fencing_token BIGINT NOT NULL, locked_at TIMESTAMPTZ NOT NULL)`);
  const { lock, unlock } = advisoryStatements(dialect, 'session', { sequence: SEQUENCE, fences: SEQUENCE });
  const withHolder = `WITH g AS (${lock}), h AS (INSERT INTO ${HOLDERS} (lock_key, pid, owner, fencing_token, locked_at)
      SELECT $1::bigint, pg_backend_pid(), $3, g.fencing_token, clock_timestamp() FROM g
      ON CONFLICT (lock_key) DO UPDATE SET pid = EXCLUDED.pid, owner = EXCLUDED.owner, fencing_token = EXCLUDED.fencing_token, locked_at = EXCLUDED.locked_at)
    SELECT fencing_token, restored FROM g`;
  const cases: Record<string, () => Promise<unknown>> = {
    'sequence only (now)': () => client.query({ name: 'probe-lock', text: lock, values: [KEY, '5000ms'] }),
    'sequence + holder row': () => client.query({ name: 'probe-lock-holder', text: withHolder, values: [KEY, '5000ms', OWNER] }),
  };
  const sections: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((name) => [name, [] as number[]]));
  for (let round = 0; round < rounds; round += 1) {
    for (const [name, take] of Object.entries(cases)) {
      let count = 0;
      for (const until = Date.now() + roundMs; Date.now() < until; count += 1) {
        await take();
        await client.query({ name: 'probe-unlock', text: unlock as string, values: [KEY] });
      }
      sections[name].push((count * 1000) / roundMs);
    }
  }
  const stats = (await client.query(`SELECT n_tup_ins + n_tup_upd AS writes, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = $1`, [HOLDERS])).rows[0] as { writes: string; hot: string };
  await client.query(`DROP TABLE ${HOLDERS}`);
  await client.query(`DROP SEQUENCE ${SEQUENCE}`);
  await client.end();
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const [now, withRow] = Object.values(sections).map(median);
  const lines = [
    '# The advisory strategy on PostgreSQL: the grant statement with and without a holder row',
    '',
    `- date: ${new Date().toISOString()}; node ${process.version}; ${rounds} alternating rounds of ${roundMs} ms each; one connection, uncontended`,
    '- each section: the grant statement, then `pg_advisory_unlock`; the holder row is an upsert into an UNLOGGED table in the same statement',
    '',
    '| statement | sections/s per round | median | × now |',
    '|---|---|---|---|',
    ...Object.entries(sections).map(([name, values]) => `| ${name} | ${values.map((v) => v.toFixed(0)).join(', ')} | ${median(values).toFixed(0)} | ${(median(values) / now).toFixed(2)} |`),
    '',
    `A holder row: ${(withRow / now).toFixed(2)}× the sections per second of the statement without it, in the same run (${stats.hot} of ${stats.writes} writes were HOT updates).`,
    '',
  ];
  writeFileSync(join(__dirname, '..', 'results', 'advisory-pg-holders-row.md'), lines.join('\n'));
  process.stdout.write(lines.join('\n'));
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});

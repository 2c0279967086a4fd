// What naming the holder costs the advisory strategy on MySQL/MariaDB: its grant statement writes the owner
// id, connection and grant time into the fence row it already writes for the token (what `query` reads).
// The statement with those columns and the one without them, sent raw on one mysql2 connection in
// alternating rounds of the same length (lock + RELEASE_LOCK, uncontended), so both see the same machine.
// Usage: node -r @swc-node/register bench/probes/advisory-owner-columns.ts [rounds] [ms per round]
// Writes bench/results/advisory-owner-columns.md.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConnection, type ResultSetHeader } from 'mysql2/promise';
import { SQL_DIALECTS } from '../../libs/distributed-lock/src/strategies/database/sql-dialect';
import { advisoryDdl, advisoryStatements } from '../../libs/distributed-lock/src/strategies/database/advisory-lock.sql';
import { fenceTableDdl } from '../../libs/distributed-lock/src/strategies/database/lock-table.sql';

const FENCES = 'bench_probe_advisory_fences';
const OWNER = `bench-host:12345:${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`;

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 6);
  const roundMs = Number(process.argv[3] ?? 2_000);
  const url = process.env.LOCK_TEST_MYSQL_URL;
  if (!url) throw new Error('LOCK_TEST_MYSQL_URL is not set (npm run services -- up prints it)');
  const connection = await createConnection(url);
  const dialect = { ...SQL_DIALECTS.mysql, mariadb: true };
  for (const ddl of advisoryDdl(dialect, { sequence: FENCES, fences: FENCES }, fenceTableDdl)) await connection.query(ddl);
  const withOwner = advisoryStatements(dialect, 'session', { sequence: FENCES, fences: FENCES });
  // The statement as it was before the owner columns: the token alone.
  const tokenOnly = `INSERT INTO \`${FENCES}\` (lock_key, fencing_token) SELECT ?, ${dialect.tokenExpression(dialect.firstToken(FENCES))} FROM DUAL WHERE GET_LOCK(?, ?) = 1
    ON DUPLICATE KEY UPDATE fencing_token = ${dialect.tokenExpression(dialect.nextToken('fencing_token', FENCES))}`;
  const cases = {
    'token only (before)': (key: string) => connection.query<ResultSetHeader>(tokenOnly, [key, key, 0]),
    'token + owner, connection, time (now)': (key: string) => connection.query<ResultSetHeader>(withOwner.lock, [key, OWNER, key, 0]),
  };
  const sections: Record<string, number[]> = { 'token only (before)': [], 'token + owner, connection, time (now)': [] };
  for (let round = 0; round < rounds; round += 1) {
    for (const [name, lock] of Object.entries(cases)) {
      let count = 0;
      for (const until = Date.now() + roundMs; Date.now() < until; count += 1) {
        const [result] = await lock('probe-key');
        if (result.affectedRows === 0) throw new Error('not granted');
        await connection.query('SELECT RELEASE_LOCK(?)', ['probe-key']);
      }
      sections[name].push((count * 1000) / roundMs);
    }
  }
  await connection.end();
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const [before, now] = Object.values(sections).map(median);
  const lines = [
    '# The advisory strategy on MariaDB: the grant statement with and without the holder\'s columns',
    '',
    `- date: ${new Date().toISOString()}; node ${process.version}; ${rounds} alternating rounds of ${roundMs} ms each; one connection, uncontended`,
    '- each section: the grant statement (GET_LOCK + the fence row upsert), then `RELEASE_LOCK`',
    '',
    '| statement | sections/s per round | median | × before |',
    '|---|---|---|---|',
    ...Object.entries(sections).map(([name, values]) => `| ${name} | ${values.map((v) => v.toFixed(0)).join(', ')} | ${median(values).toFixed(0)} | ${(median(values) / before).toFixed(2)} |`),
    '',
    `Naming the holder: ${(now / before).toFixed(2)}× the sections per second of the token alone, in the same run.`,
    '',
  ];
  writeFileSync(join(__dirname, '..', 'results', 'advisory-owner-columns.md'), lines.join('\n'));
  process.stdout.write(lines.join('\n'));
}

main().catch((error: unknown) => {
  process.stderr.write(`${String(error)}\n`);
  process.exit(1);
});

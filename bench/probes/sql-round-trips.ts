// Statements and round trips per lock of the SQL subjects: what the client sends to the server for one
// acquire + release, uncontended, and per section (a hand-over) with contenders, each its own instance.
// Usage: node -r @swc-node/register bench/probes/sql-round-trips.ts [subject ids, comma-separated] [sections]
// (ids as in bench/subjects.ts; default: the database strategies and their floors). Needs the test servers
// (LOCK_TEST_MYSQL_URL, LOCK_TEST_POSTGRES_URL). Counts every statement the drivers send (mysql2's `query`
// and `execute`, pg's `query`), on every connection, by wrapping their prototypes; a round trip is a
// statement that left after the one before it on the same caller was answered, so statements sent together
// (pipelined on one connection, or at once on two) count once. Not a timing: the same on a quiet and a busy
// machine. The client CPU per uncontended lock is printed too: a proxy for the client's own work, less
// sensitive to a busy machine than a wall-clock rate, though not immune to it.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { BENCH_SUBJECTS } from '../subjects';
import type { BenchLock } from '../bench-subject';

const DEFAULT_SUBJECTS = [
  'advisory-mysql',
  'peer:get-lock@mysql',
  'advisory-postgres',
  'floor:postgres pg_advisory_lock + pg_advisory_unlock',
  'pessimistic',
  'floor:mysql pessimistic strategy SQL (FOR UPDATE + token upsert + COMMIT)',
  'pessimistic-postgres',
  'floor:postgres pessimistic strategy SQL (lock_timeout + FOR UPDATE + token upsert + COMMIT)',
  'row-mysql',
  'row-postgres',
  'row-sqlite',
];

interface Tally {
  statements: number;
  /** Statements that left while none of the probe's were on their way: a new round trip on the critical path. */
  roundTrips: number;
  inFlight: number;
  texts: Map<string, number>;
}

const tally: Tally = { statements: 0, roundTrips: 0, inFlight: 0, texts: new Map() };

function count(sql: unknown): () => void {
  const text = typeof sql === 'string' ? sql : String((sql as { sql?: unknown; text?: unknown } | null)?.sql ?? (sql as { text?: unknown } | null)?.text ?? '');
  tally.statements += 1;
  if (tally.inFlight === 0) tally.roundTrips += 1;
  tally.inFlight += 1;
  const shape = text.replace(/\s+/g, ' ').slice(0, 70);
  tally.texts.set(shape, (tally.texts.get(shape) ?? 0) + 1);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    tally.inFlight -= 1;
  };
}

/** Wraps mysql2's and pg's statement methods (their prototypes: every connection, pooled or not). */
function instrument(): void {
  const require = createRequire(__filename);
  // Not in mysql2's exports map: by its path, next to the package's entry point.
  const mysqlConnection = require(join(dirname(require.resolve('mysql2')), 'lib', 'base', 'connection.js')) as { prototype: Record<string, (...args: unknown[]) => unknown> };
  for (const method of ['query', 'execute']) {
    const original = mysqlConnection.prototype[method];
    mysqlConnection.prototype[method] = function counted(this: unknown, ...args: unknown[]): unknown {
      const finish = count(args[0]);
      const callbackAt = args.findIndex((arg) => typeof arg === 'function');
      if (callbackAt >= 0) {
        const callback = args[callbackAt] as (...answer: unknown[]) => unknown;
        args[callbackAt] = (...answer: unknown[]): unknown => {
          finish();
          return callback(...answer);
        };
        return original.apply(this, args);
      }
      const command = original.apply(this, args) as { once?: (event: string, listener: () => void) => void };
      command?.once?.('end', finish);
      command?.once?.('error', finish);
      return command;
    };
  }
  const pg = require('pg') as { Client: { prototype: Record<string, (...args: unknown[]) => unknown> } };
  const pgQuery = pg.Client.prototype.query;
  pg.Client.prototype.query = function counted(this: unknown, ...args: unknown[]): unknown {
    const finish = count(args[0]);
    const callbackAt = args.findIndex((arg) => typeof arg === 'function');
    if (callbackAt >= 0) {
      const callback = args[callbackAt] as (...answer: unknown[]) => unknown;
      args[callbackAt] = (...answer: unknown[]): unknown => {
        finish();
        return callback(...answer);
      };
      return pgQuery.apply(this, args);
    }
    const result = pgQuery.apply(this, args) as Promise<unknown> | undefined;
    if (result && typeof result.then === 'function') void result.then(finish, finish);
    else finish();
    return result;
  };
  const sqlite = require('better-sqlite3') as { prototype: Record<string, (...args: unknown[]) => unknown> };
  const prepare = sqlite.prototype.prepare;
  sqlite.prototype.prepare = function counted(this: unknown, ...args: unknown[]): unknown {
    const statement = prepare.apply(this, args) as Record<string, (...a: unknown[]) => unknown>;
    for (const method of ['run', 'get', 'all']) {
      const run = statement[method].bind(statement);
      statement[method] = (...a: unknown[]): unknown => {
        count(args[0])();
        return run(...a);
      };
    }
    return statement;
  };
}

function reset(): void {
  tally.statements = 0;
  tally.roundTrips = 0;
  tally.texts.clear();
}

async function measure(id: string, sections: number): Promise<void> {
  const subject = BENCH_SUBJECTS.find((candidate) => candidate.id === id);
  if (!subject) throw new Error(`unknown subject ${id}`);
  const key = `probe-rt:${process.pid}:${Date.now()}`;
  // Uncontended: one instance, the key free each time.
  const one = await subject.create();
  const release = await one.acquire(key, 5_000);
  await release();
  reset();
  const cpuBefore = process.cpuUsage();
  for (let i = 0; i < sections; i += 1) await (await one.acquire(key, 5_000))();
  const cpu = process.cpuUsage(cpuBefore);
  const uncontended = { statements: tally.statements / sections, roundTrips: tally.roundTrips / sections, texts: new Map(tally.texts), cpuUs: (cpu.user + cpu.system) / sections };
  // Contended: 4 instances on one key (a hand-over per section).
  const others: BenchLock[] = [one, ...(await Promise.all([1, 2, 3].map(() => subject.create())))];
  await Promise.all(others.map(async (lock) => (await lock.acquire(`${key}:warm`, 5_000))()));
  reset();
  let done = 0;
  await Promise.all(
    others.map(async (lock) => {
      while (done < sections) {
        const releaseIt = await lock.acquire(key, 10_000);
        done += 1;
        await releaseIt();
      }
    }),
  );
  const perSection = tally.statements / done;
  console.log(`\n${id}\n  uncontended: ${uncontended.statements.toFixed(2)} statements, ${uncontended.roundTrips.toFixed(2)} round trips, ${uncontended.cpuUs.toFixed(0)} µs of this process's CPU per lock`);
  for (const [text, n] of [...uncontended.texts].sort((a, b) => b[1] - a[1])) console.log(`    ${(n / sections).toFixed(2)} × ${text}`);
  console.log(`  4 instances: ${perSection.toFixed(2)} statements per section (${done} sections)`);
  for (const [text, n] of [...tally.texts].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`    ${(n / done).toFixed(2)} × ${text}`);
  await Promise.all(others.map((lock) => lock.close()));
}

async function main(): Promise<void> {
  instrument();
  const ids = process.argv[2] ? process.argv[2].split(',') : DEFAULT_SUBJECTS;
  const sections = Number(process.argv[3] ?? 200);
  for (const id of ids) await measure(id, sections);
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

import { createHash } from 'node:crypto';
import { InvalidLockOptionsError } from '../../errors/invalid-lock-options.error';
import type { SqlDialect } from './sql-dialect';

/** Default table names. */
export const LOCK_TABLES = Object.freeze({
  /** Row strategy: one row per held lock, deleted on release. */
  leases: 'distributed_lock_leases',
  /** Pessimistic strategy: one row per key, locked with SELECT … FOR UPDATE; never deleted. */
  rows: 'distributed_lock_rows',
  /** Pessimistic strategy: the fencing token per key, written outside the lock's transaction (a rollback must not undo it). */
  fences: 'distributed_lock_fences',
});

/** Longest row-table name whose fencing table is that name + "_fences" (at most 62 characters). */
const WHOLE_NAME_UP_TO = 55;

/**
 * The pessimistic strategy's fencing table for row table `table`: the default table's, also where that
 * table is named, so that every instance of one lock draws its tokens from one row and `query` finds the
 * row a holder wrote. Another table's is its name + "_fences" (62 characters at most), and a name over 55
 * characters' its first 47 + "_" + 8 hexadecimal digits of its SHA-256 + "_fences": 63 characters, the
 * longest identifier PostgreSQL keeps, so never a shorter name's. Two tables never share one, even when
 * their names differ only at the end, or only in case: the hash is of the name as given, since a server
 * that keeps case in table names (MariaDB's default on Linux) keeps "Locks…" and "locks…" apart. (On a server
 * that folds them, two spellings of one long name get two fencing tables: spell it one way everywhere.)
 * `foldsCase` (MySQL/MariaDB): the default table is recognised in any case; PostgreSQL's quoted names keep
 * their case. A name whose own fencing table would be the default table's ("distributed_lock") is refused.
 */
export function fenceTableOf(table: string, foldsCase: boolean): string {
  const same = (a: string, b: string): boolean => (foldsCase ? a.toLowerCase() === b : a === b);
  if (same(table, LOCK_TABLES.rows)) return LOCK_TABLES.fences;
  if (table.length > WHOLE_NAME_UP_TO) {
    const digest = createHash('sha256').update(table, 'utf8').digest('hex').slice(0, 8);
    return `${table.slice(0, WHOLE_NAME_UP_TO - 8)}_${digest}_fences`;
  }
  const fences = `${table}_fences`;
  if (same(fences, LOCK_TABLES.fences)) {
    throw new InvalidLockOptionsError('table', `"${table}" would share its fencing table ("${fences}") with the default table "${LOCK_TABLES.rows}": choose another name.`);
  }
  return fences;
}

/** Longest key the tables store (VARCHAR(255) keeps the primary key within InnoDB's index limit in utf8mb4). */
export const MAX_SQL_KEY_LENGTH = 255;

/**
 * DDL of the lease table (row strategy): unique key, owner, hold count, fencing token, expiry on the
 * server's clock, timestamps. Run it in a migration, or let the strategy run it (`ensureTable`).
 */
export function leaseTableDdl(dialect: SqlDialect, table: string = LOCK_TABLES.leases): string {
  const t = dialect.quote(table);
  if (dialect.name === 'postgres') {
    return `CREATE TABLE IF NOT EXISTS ${t} (
  lock_key ${lockKeyColumn(dialect)} PRIMARY KEY,
  owner VARCHAR(255) NOT NULL,
  hold_count INT NOT NULL DEFAULT 1,
  fencing_token BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  acquired_at TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
)`;
  }
  return dialect.name === 'mysql'
    ? `CREATE TABLE IF NOT EXISTS ${t} (
  lock_key ${lockKeyColumn(dialect)} PRIMARY KEY,
  owner VARCHAR(255) NOT NULL,
  hold_count INT NOT NULL DEFAULT 1,
  fencing_token BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  acquired_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  KEY ${dialect.quote(`${table}_expires_at`)} (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=${lockKeyCollation(dialect)}`
    : `CREATE TABLE IF NOT EXISTS ${t} (
  lock_key TEXT NOT NULL PRIMARY KEY,
  owner TEXT NOT NULL,
  hold_count INTEGER NOT NULL DEFAULT 1,
  fencing_token INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  acquired_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
)`;
}

/**
 * Statements that go with the lease table, to run after `leaseTableDdl` in your migration (the strategy
 * runs them with `ensureTable`). On SQLite: a one-row table holding the last fencing token handed out,
 * kept by triggers, so that a new row's first token is above every token before (SQLite's clock moves
 * once per millisecond; a row deleted and made again within one would repeat a token). On PostgreSQL:
 * the index on `expires_at` (MySQL/MariaDB declare it inside the table).
 */
export function leaseClockDdl(dialect: SqlDialect, table: string = LOCK_TABLES.leases): string[] {
  if (dialect.name === 'postgres') {
    return [`CREATE INDEX IF NOT EXISTS ${dialect.quote(`${table.slice(0, 52)}_expires_at`)} ON ${dialect.quote(table)} (expires_at)`];
  }
  if (dialect.name !== 'sqlite') return [];
  const t = dialect.quote(table);
  const clock = dialect.quote(`${table}_clock`);
  const keep = (event: string, name: string): string =>
    `CREATE TRIGGER IF NOT EXISTS ${dialect.quote(`${table}_${name}`)} AFTER ${event} ON ${t} BEGIN UPDATE ${clock} SET last = max(last, NEW.fencing_token) WHERE id = 1; END`;
  return [
    `CREATE TABLE IF NOT EXISTS ${clock} (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL)`,
    `INSERT OR IGNORE INTO ${clock} (id, last) SELECT 1, COALESCE(MAX(fencing_token), 0) FROM ${t}`,
    keep('INSERT', 'clock_on_insert'),
    keep('UPDATE OF fencing_token', 'clock_on_update'),
  ];
}

/** DDL of the row-lock table (pessimistic strategy): only the key, whose index record is what gets locked. */
export function rowTableDdl(dialect: SqlDialect, table: string = LOCK_TABLES.rows): string {
  if (dialect.name === 'postgres') {
    return `CREATE TABLE IF NOT EXISTS ${dialect.quote(table)} (
  lock_key ${lockKeyColumn(dialect)} PRIMARY KEY,
  created_at TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
)`;
  }
  return `CREATE TABLE IF NOT EXISTS ${dialect.quote(table)} (
  lock_key ${lockKeyColumn(dialect)} PRIMARY KEY,
  created_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=${lockKeyCollation(dialect)}`;
}

/**
 * DDL of the fencing table (pessimistic strategy): the last token per key and who holds the lock. It is
 * written in autocommit by the holder of the row lock, so tokens survive a rolled-back section.
 */
export function fenceTableDdl(dialect: SqlDialect, table: string = LOCK_TABLES.fences): string {
  if (dialect.name === 'postgres') {
    return `CREATE TABLE IF NOT EXISTS ${dialect.quote(table)} (
  lock_key ${lockKeyColumn(dialect)} PRIMARY KEY,
  fencing_token BIGINT NOT NULL,
  locked_by VARCHAR(255) NULL,
  locked_by_connection BIGINT NULL,
  locked_at TIMESTAMPTZ(3) NULL
)`;
  }
  return `CREATE TABLE IF NOT EXISTS ${dialect.quote(table)} (
  lock_key ${lockKeyColumn(dialect)} PRIMARY KEY,
  fencing_token BIGINT NOT NULL,
  locked_by VARCHAR(255) NULL,
  locked_by_connection BIGINT NULL,
  locked_at TIMESTAMP(3) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=${lockKeyCollation(dialect)}`;
}

/**
 * The collation of lock keys on MySQL/MariaDB: binary and NO PAD, so that keys are compared byte for byte.
 * The `_bin` collations pad: under `utf8mb4_bin`, "k" and "k " are the same primary key, hence the same lock.
 */
export function lockKeyCollation(dialect: SqlDialect): string {
  return dialect.mariadb ? 'utf8mb4_nopad_bin' : 'utf8mb4_0900_bin';
}

/**
 * The lock key column's type, for CREATE TABLE and for ALTER TABLE … MODIFY. On PostgreSQL, the "C"
 * collation compares bytes whatever the database's default, and VARCHAR never pads: "k" and "k " are two keys.
 */
export function lockKeyColumn(dialect: SqlDialect): string {
  if (dialect.name === 'postgres') return `VARCHAR(${MAX_SQL_KEY_LENGTH}) COLLATE "C" NOT NULL`;
  return `VARCHAR(${MAX_SQL_KEY_LENGTH}) CHARACTER SET utf8mb4 COLLATE ${lockKeyCollation(dialect)} NOT NULL`;
}

/** Table names are interpolated into SQL, so only plain identifiers are accepted. */
export const SQL_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

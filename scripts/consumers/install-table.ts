// The README's install table, read from the README: the consumer check installs what it says, so the table
// and the check cannot drift apart. Each row's first code span is what to install beside the tarball.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface InstallRow {
  /** The first cell: what the user uses ("PostgreSQL", "traces and metrics"). */
  readonly label: string;
  /** The packages the row says to install, as written (`better-sqlite3@12`); none for "nothing". */
  readonly packages: readonly string[];
}

const README = join(__dirname, '..', '..', 'README.md');
const MARKER = '<!-- install-table -->';

/** The rows of the table that follows `<!-- install-table -->` in the README. */
export function installTable(readme = readFileSync(README, 'utf8')): InstallRow[] {
  const at = readme.indexOf(MARKER);
  if (at < 0) throw new Error(`README.md has no ${MARKER}`);
  const lines = readme.slice(at + MARKER.length).trimStart().split('\n');
  const rows: InstallRow[] = [];
  // Header and separator first, then the rows up to the first line that is not one.
  for (const line of lines.slice(2)) {
    if (!line.startsWith('|')) break;
    const [label, install] = line.split('|').slice(1, 3).map((cell) => cell.trim());
    const packages = /`([^`]+)`/.exec(install)?.[1].split(/\s+/) ?? [];
    rows.push({ label, packages });
  }
  if (rows.length === 0) throw new Error('the README install table has no rows');
  return rows;
}

/** The row whose label starts with `label`; fails when the README has none. */
export function installRow(label: string, rows = installTable()): InstallRow {
  const row = rows.find((candidate) => candidate.label.startsWith(label));
  if (!row) throw new Error(`the README install table has no row "${label}"`);
  return row;
}

/**
 * What a user adds to an app that has the tarball and `ioredis` (the README's first install) to use `row`:
 * the row's packages, with `ioredis@5` before a row that brings TypeORM (the README's note: TypeORM declares an
 * optional peer on ioredis 5, and npm refuses ioredis 6 beside it).
 */
export function besideRedis(row: InstallRow): string[] {
  return row.packages.includes('typeorm') ? ['ioredis@5', ...row.packages] : [...row.packages];
}

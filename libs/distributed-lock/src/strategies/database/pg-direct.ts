import { typeOrmQueryError, type DirectResult } from './mysql-direct';

/** What the strategies use of a pg `Client` or `Pool`: `query` with a query config, answered by a promise. */
export interface PgQueryable {
  query(config: { text: string; values?: readonly unknown[]; name?: string }): Promise<{ rows?: unknown[]; rowCount?: number | null }>;
}

/** Names of the statements prepared so far, by their text: a handful (the strategies' fixed statements). */
const names = new Map<string, string>();
/** Past this many texts, statements go unnamed: a caller with texts that vary must not grow the map for good. */
const MAX_NAMED = 256;

/**
 * The name a strategy's statement is prepared under on each pg connection: `dl_` and a hash of its text, so
 * that one text always has one name and two texts never share one (pg refuses a name prepared with
 * another text). PostgreSQL parses and plans a named statement once per connection, and pg then sends
 * only its parameters: the advisory lock's nested SELECT is not parsed again for every lock.
 */
function nameOf(text: string): string | undefined {
  let name = names.get(text);
  if (name !== undefined || names.size >= MAX_NAMED) return name;
  // FNV-1a over the text, 32 bits, twice with two seeds: 64 bits, so two texts never meet in practice.
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ text.length;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  name = `dl_${(a >>> 0).toString(36)}_${(b >>> 0).toString(36)}`;
  names.set(text, name);
  return name;
}

/**
 * One statement of a strategy on a pg client or pool, straight (not through TypeORM's query runner, which
 * adds per statement a module lookup, a captured stack, logging and subscriber broadcasts, result copies),
 * as a named (prepared) statement. The result in the shape the strategies read (`DirectResult`): the rows,
 * and the row count as `affected`; a failure as TypeORM's `QueryFailedError`.
 */
export async function queryPg(target: PgQueryable, text: string, values: readonly unknown[]): Promise<DirectResult> {
  const name = nameOf(text);
  const result = await target.query(name === undefined ? { text, values } : { name, text, values }).catch((error: unknown) => {
    // As TypeORM's own path reports it (`QueryFailedError`, the driver's error as `driverError`): callers
    // that read TypeORM's errors keep working.
    throw typeOrmQueryError(text, values, error, 'the database strategies');
  });
  const rows = result.rows ?? [];
  return { raw: result, records: rows, affected: typeof result.rowCount === 'number' ? result.rowCount : undefined };
}

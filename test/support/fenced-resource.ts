import { createPool, type Pool, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';

/**
 * A resource that checks fencing tokens, as the seeds ask of any store a lock protects: a write carries
 * the writer's token and is applied only if no higher token wrote before (one conditional UPDATE on
 * MariaDB). A holder that lost its lock while paused is thereby refused once it wakes.
 */
export class FencedResource {
  private readonly pool: Pool;

  constructor(url = process.env.LOCK_TEST_MYSQL_URL as string) {
    this.pool = createPool({ uri: url, connectionLimit: 2 });
  }

  async reset(id: string): Promise<void> {
    await this.pool.query('CREATE TABLE IF NOT EXISTS fenced_resource_v2 (id VARCHAR(191) PRIMARY KEY, token BIGINT NOT NULL, writer VARCHAR(64) NOT NULL, accepted BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB');
    await this.pool.query('REPLACE INTO fenced_resource_v2 (id, token, writer, accepted) VALUES (?, 0, ?, 0)', [id, 'nobody']);
  }

  /** True when applied; false when a write with a token at least as high came first. */
  async write(id: string, token: number, writer: string): Promise<boolean> {
    return (await this.writeNumbered(id, token, writer)) !== undefined;
  }

  /**
   * The same write, resolving its place in the order the resource accepted writes (1, 2, …), or undefined
   * when it was refused. The number comes from the same UPDATE (LAST_INSERT_ID(expr)), so it is the
   * resource's own order, whoever wrote.
   */
  async writeNumbered(id: string, token: number, writer: string): Promise<number | undefined> {
    const [result] = await this.pool.query<ResultSetHeader>(
      'UPDATE fenced_resource_v2 SET token = ?, writer = ?, accepted = LAST_INSERT_ID(accepted + 1) WHERE id = ? AND token < ?',
      [token, writer, id, token],
    );
    return result.affectedRows === 1 ? Number(result.insertId) : undefined;
  }

  async read(id: string): Promise<{ token: number; writer: string }> {
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT token, writer FROM fenced_resource_v2 WHERE id = ?', [id]);
    return { token: Number(rows[0]?.token), writer: String(rows[0]?.writer) };
  }

  close(): Promise<void> {
    return this.pool.end();
  }
}

import { besideRedis, installRow, installTable } from './install-table';

describe('the README install table, as the consumer check reads it', () => {
  const rows = installTable();

  it('has a row per backend, the schedule, health checks and telemetry', () => {
    expect(rows.map((row) => row.label)).toEqual(
      expect.arrayContaining(['in memory', 'Redis, Redlock', 'MySQL, MariaDB', 'PostgreSQL', 'SQLite', 'ZooKeeper', 'etcd', 'memcached', 'health checks']),
    );
    expect(installRow('in memory', rows).packages).toEqual([]);
    expect(installRow('traces and metrics', rows).packages).toContain('@opentelemetry/sdk-node');
  });

  it('puts ioredis 5 before the rows that bring TypeORM, and only those', () => {
    expect(besideRedis(installRow('PostgreSQL', rows))).toEqual(['ioredis@5', 'typeorm', '@nestjs/typeorm', 'pg']);
    expect(besideRedis(installRow('etcd', rows))).toEqual(['etcd3']);
  });
});

import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DistributedLockModule } from 'nest-distributed-lock';
import { AdvisoryLockStrategy, PessimisticLockStrategy, RowLockStrategy } from 'nest-distributed-lock/strategies/database';
import { RedisLockStrategy } from 'nest-distributed-lock/strategies/redis';
import { ZooKeeperLockStrategy } from 'nest-distributed-lock/strategies/zookeeper';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { AppController } from './app.controller';
import { AppService } from './app.service';
import { COUNTER_STORE, CounterService } from './counter.service';
import { RedisCounterStore } from './redis-counter.store';
import { ZooKeeperCounterService } from './zookeeper-counter.service';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// The app's database: PostgreSQL when POSTGRES_URL names one, MariaDB or MySQL when MYSQL_URL does, else a SQLite file.
const postgresUrl = process.env.POSTGRES_URL;
const mysqlUrl = process.env.MYSQL_URL;
const database: DataSourceOptions = postgresUrl
  ? { type: 'postgres', url: postgresUrl }
  : mysqlUrl
    ? { type: 'mysql', url: mysqlUrl }
    : { type: 'better-sqlite3', database: process.env.SQLITE_FILE ?? 'app.sqlite' };
// ZooKeeper, when ZOOKEEPER_CONNECT names an ensemble ("host:port,…"); its client, `zookeeper`, is installed then.
const zookeeperConnect = process.env.ZOOKEEPER_CONNECT;

@Module({
  imports: [
    TypeOrmModule.forRoot(database),
    DistributedLockModule.forRootAsync({
      inject: [DataSource],
      useFactory: (dataSource: DataSource) => ({
        strategies: {
          default: new RedisLockStrategy({ connection: redisUrl }),
          orders: new RowLockStrategy({ dataSource }),
          // Row locks held by a transaction (SELECT … FOR UPDATE) and the server's own named locks need a
          // database server; on SQLite, the lock table.
          ledger: database.type === 'better-sqlite3' ? new RowLockStrategy({ dataSource }) : new PessimisticLockStrategy({ dataSource }),
          named: database.type === 'better-sqlite3' ? new RowLockStrategy({ dataSource }) : new AdvisoryLockStrategy({ dataSource }),
          ...(zookeeperConnect ? { zookeeper: new ZooKeeperLockStrategy({ connect: zookeeperConnect }) } : {}),
        },
      }),
    }),
  ],
  controllers: [AppController],
  providers: [
    AppService,
    CounterService,
    ...(zookeeperConnect ? [ZooKeeperCounterService] : []),
    { provide: COUNTER_STORE, useFactory: () => new RedisCounterStore(redisUrl) },
  ],
})
export class AppModule {}

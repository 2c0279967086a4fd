// The consumer apps under test/consumers: generated once by `nest new`, then given a @Locked counter.
// What each installs, and on which Node majors each check runs.
import { besideRedis, installRow } from './install-table';

export type NodeMajor = 20 | 22 | 24;

export interface ConsumerFixture {
  /** Name in the report, and folder under test/consumers unless `app` names another. */
  readonly name: string;
  /** Folder under test/consumers when one app is installed twice, with other packages. */
  readonly app?: string;
  /**
   * The app's database: its own SQLite file, `mariadb` (the test server, given to the app as MYSQL_URL) or
   * `postgres` (the test server, as POSTGRES_URL).
   */
  readonly database?: 'sqlite' | 'mariadb' | 'postgres';
  /** Given the test ZooKeeper as ZOOKEEPER_CONNECT (the app then registers a ZooKeeper strategy). */
  readonly zookeeper?: boolean;
  /** Packages installed beside the library's tarball, as a user would name them. */
  readonly packages: readonly string[];
  /** Node whose npm installs and whose toolchain builds the app (Nest CLI 12 wants Node ≥ 22.12). */
  readonly buildNode: NodeMajor;
  /** Lock modes of the two-process scenario: the app's LOCKS variable. */
  readonly scenarios: readonly string[];
  /** Node majors the app's own unit tests run on. */
  readonly unitNodes: readonly NodeMajor[];
  /** Native modules to rebuild for each Node major (their ABI differs). */
  readonly nativeModules: readonly string[];
  /** Node majors the two-instance runs go on. Default: every one the check runs. */
  readonly runNodes?: readonly NodeMajor[];
  /** Runs the README's quick start over HTTP on the build's Node: two `npm run start:prod`, 100 POSTs each. */
  readonly quickStart?: boolean;
  /** Runs docs/observability.md's set-up (`dist/observed.js`) on the build's Node: a lock's span and count. */
  readonly observability?: boolean;
  /** Also installs every row of the README's install table into a copy of this app (install-matrix.ts). */
  readonly installMatrix?: boolean;
}

/** The README's rows, as written there: the apps install what the table says. */
const redis = installRow('Redis').packages;
const telemetry = installRow('traces and metrics').packages;

export const ALL_NODES: readonly NodeMajor[] = [20, 22, 24];

export const FIXTURES: readonly ConsumerFixture[] = [
  {
    // The README's quick start and docs/observability.md's set-up, on the newest OpenTelemetry line (Node 22.15+).
    name: 'nest12-esm',
    packages: [...redis, ...telemetry],
    buildNode: 22,
    scenarios: ['redis'],
    unitNodes: ALL_NODES,
    nativeModules: [],
    quickStart: true,
    observability: true,
    installMatrix: true,
  },
  {
    name: 'nest12-cjs',
    // The older lines of the optional peers (the repository's own tests run the newest): an existing app
    // on TypeORM 0.3, whose optional peer on ioredis is ^5.
    packages: ['ioredis@5', '@nestjs/typeorm', 'typeorm@0.3', 'better-sqlite3@11'],
    buildNode: 22,
    scenarios: ['redis', 'row'],
    // Jest loads Nest 12 (ESM only) through require(esm), which it supports from Node 24.9: on 20 and 22 the
    // app's generated test fails the same way before our library is installed.
    unitNodes: [24],
    nativeModules: ['better-sqlite3'],
  },
  {
    // The same app on the lowest TypeORM and mysql2 of the peer ranges, on MariaDB, where the database
    // strategies' fast paths reach into them (typeorm-internals.ts): a floor they no longer fit fails here,
    // not in a user's app. No SQLite: the app proves that on the newest 0.3 above.
    name: 'nest12-cjs-typeorm-floor',
    app: 'nest12-cjs',
    packages: ['ioredis@5', '@nestjs/typeorm', 'typeorm@0.3.21', 'mysql2@3.9.0'],
    database: 'mariadb',
    buildNode: 22,
    scenarios: ['row', 'pessimistic'],
    unitNodes: [],
    nativeModules: [],
  },
  {
    // The same app on the lowest pg and node-zookeeper-client of the peer ranges, where the library reaches
    // into them (typeorm-internals.ts reads pg's client; zookeeper-client.ts watches the ZooKeeper client's
    // socket): the pessimistic lock and the advisory lock on PostgreSQL, and the ZooKeeper lock.
    name: 'nest12-cjs-pg-zookeeper-floor',
    app: 'nest12-cjs',
    packages: ['ioredis@5', '@nestjs/typeorm', 'typeorm@0.3.21', 'pg@8.11.0', 'node-zookeeper-client@1.1.3'],
    database: 'postgres',
    zookeeper: true,
    buildNode: 22,
    scenarios: ['pessimistic', 'named', 'zookeeper'],
    unitNodes: [],
    nativeModules: [],
  },
  {
    // The observability set-up on the OpenTelemetry line npm picks on Node 20 (sdk-node 0.223, API 1.9).
    name: 'nest11-cjs',
    packages: [...redis, ...telemetry],
    buildNode: 20,
    scenarios: ['redis'],
    unitNodes: ALL_NODES,
    nativeModules: [],
    observability: true,
    installMatrix: true,
  },
  {
    // Redis beside TypeORM 1.x, as the README's install table says to install them: ioredis 5 (TypeORM's
    // optional peer), the newest TypeORM and @nestjs/typeorm, on PostgreSQL. A Redis lock and a lock-table
    // lock in one app, on the build's Node (the other Nodes run the same code in the fixtures above).
    name: 'nest12-cjs-typeorm1-redis5',
    app: 'nest12-cjs',
    packages: besideRedis(installRow('PostgreSQL')),
    database: 'postgres',
    buildNode: 22,
    scenarios: ['redis', 'row'],
    unitNodes: [],
    nativeModules: [],
    runNodes: [22],
  },
];

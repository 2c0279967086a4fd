import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { isPortFree, waitUntil } from './probes';
import { isOurs, killProcess, launch, pauseProcess, resumeProcess, stopProcess } from './server-process';
import {
  etcdArgs,
  etcdKind,
  MARIADB_DATABASE,
  MARIADB_PASSWORD,
  mariadbArgs,
  mariadbKind,
  memcachedArgs,
  memcachedKind,
  POSTGRES_DATABASE,
  POSTGRES_USER,
  postgresArgs,
  postgresBinary,
  postgresKind,
  redisArgs,
  redisClusterNodeArgs,
  redisKind,
  redisMasterArgs,
  redisReplicaArgs,
  redisSentinelArgs,
  redisSentinelKind,
  zookeeperArgs,
  zookeeperKind,
  type ServerKind,
} from './server-kinds';
import { formRedisCluster } from './redis-cluster';
import { ETCD_SECURE, etcdSecureArgs, etcdSecureKind } from './etcd-secure';
import { REDIS_TLS, redisTlsArgs, redisTlsKind } from './redis-tls';
import { MARIADB_TLS, mariadbTlsArgs, mariadbTlsKind } from './mariadb-tls';
import { POSTGRES_TLS, postgresTlsArgs, postgresTlsKind } from './postgres-tls';
import { instancesRoot, listRecords, readRecord, removeRecord, type ServerRecord } from './service-state';

/** The server set-ups the tests, the demo and the benchmarks use. */
export const TOPOLOGY_NAMES = [
  'redis',
  'redis-faults',
  'redis-restart',
  'redis-sentinel',
  'redis-sentinel2',
  'redis-cluster',
  'redis-cluster-replicas',
  'redis5',
  'redis5-faults',
  'mariadb',
  'mariadb-faults',
  'zookeeper',
  'zookeeper3',
  'zookeeper3-faults',
  'etcd',
  'etcd3',
  'etcd3-faults',
  'memcached',
  'memcached-faults',
  'postgres',
  'postgres-faults',
  'etcd-secure',
  'redis-tls',
  'mariadb-tls',
  'postgres-tls',
] as const;
export type TopologyName = (typeof TOPOLOGY_NAMES)[number];

/**
 * The topologies `npm test` starts once for the whole run, and `npm run services -- up` starts by default.
 * Every topology that more than one test file uses belongs here: a file that started one itself would stop
 * it in its `afterAll` under the others (seen with the Redis Cluster, which two contract files and an
 * integration file use at once). Fault suites start topologies of their own, which they kill.
 */
export const SHARED_TOPOLOGIES: readonly TopologyName[] = ['redis', 'redis5', 'redis-cluster', 'mariadb', 'zookeeper', 'etcd', 'zookeeper3', 'etcd3', 'memcached', 'postgres'];

interface MemberPlan {
  readonly name: string;
  readonly ports: readonly number[];
  /** A server of another kind than the topology's (a Sentinel beside its Redis servers), with its own command line. */
  readonly own?: { kind: ServerKind; command: string; args(member: { dir: string; ports: readonly number[] }): string[] };
}

interface TopologyPlan {
  readonly kind: ServerKind;
  /** Environment variable through which clients find it; a user who sets it brings their own server. */
  readonly envVar: string;
  readonly members: readonly MemberPlan[];
  /** The program (read when the topology starts: PostgreSQL's path is known only once its package is installed). */
  readonly command: string;
  args(member: { name: string; dir: string; ports: readonly number[] }): string[];
  envValue(): string;
  /** Runs once every member serves, to make one system of them (a Redis Cluster's `--cluster create`). */
  form?(members: readonly ServerRecord[]): Promise<void>;
}

// Dedicated loopback ports, never the standard ones (6379, 3306, 2181, 2379).
const REDIS5_PORTS = [16380, 16381, 16382, 16383, 16384];
// Separate masters for fault tests, which kill and restart them while other suites use redis5.
const REDIS5_FAULT_PORTS = [16390, 16391, 16392, 16393, 16394];
// A master, its replica and one Sentinel, for failover tests (SIGKILL of the master, promotion of the replica).
const SENTINEL: SentinelPorts = { masterPort: 16500, replicaPorts: [16501], sentinelPort: 16600, masterName: 'lock-test' };
// The same with two replicas.
const SENTINEL2: SentinelPorts = { masterPort: 16510, replicaPorts: [16511, 16512], sentinelPort: 16610, masterName: 'lock-test2' };

interface SentinelPorts {
  readonly masterPort: number;
  readonly replicaPorts: readonly number[];
  readonly sentinelPort: number;
  readonly masterName: string;
}

/**
 * A master, its replicas (members `<prefix>-replica`, `<prefix>-replica-2`…) and one Sentinel that gives up
 * on the master after 1 s.
 */
function sentinelPlan(prefix: string, envVar: string, set: SentinelPorts): TopologyPlan {
  return {
    kind: redisKind,
    envVar,
    members: [
      { name: `${prefix}-master`, ports: [set.masterPort] },
      ...set.replicaPorts.map((port, i) => ({
        name: i === 0 ? `${prefix}-replica` : `${prefix}-replica-${i + 1}`,
        ports: [port],
        own: { kind: redisKind, command: 'redis-server', args: (member: { ports: readonly number[]; dir: string }) => redisReplicaArgs(member.ports[0], member.dir, set.masterPort) },
      })),
      {
        name: `${prefix}-monitor`,
        ports: [set.sentinelPort],
        own: {
          kind: redisSentinelKind({ masterName: set.masterName, masterPort: set.masterPort, replicaPorts: set.replicaPorts, downAfterMs: 1_000, failoverTimeoutMs: 5_000 }),
          command: 'redis-sentinel',
          args: (member: { dir: string }) => redisSentinelArgs(member.dir),
        },
      },
    ],
    command: 'redis-server',
    args: (member) => redisMasterArgs(member.ports[0], member.dir),
    envValue: () => `redis+sentinel://127.0.0.1:${set.sentinelPort}/${set.masterName}`,
  };
}
// Redis Cluster: 3 masters; and, for failover tests, 3 masters with one replica each. Each node also listens
// on its cluster bus, port + 10 000 (26700–26702, 26710–26715).
const CLUSTER_PORTS = [16700, 16701, 16702];
const CLUSTER_REPLICAS_PORTS = [16710, 16711, 16712, 16713, 16714, 16715];

/** A Redis Cluster of `ports` (members named `<prefix>-N`), formed once they serve, `replicas` per master. */
function clusterPlan(prefix: string, envVar: string, ports: readonly number[], replicas: number): TopologyPlan {
  return {
    kind: redisKind,
    envVar,
    members: ports.map((port, i) => ({ name: `${prefix}-${i + 1}`, ports: [port, port + 10_000] })),
    command: 'redis-server',
    args: (member) => redisClusterNodeArgs(member.ports[0], member.dir),
    envValue: () => ports.map((port) => `redis://127.0.0.1:${port}`).join(','),
    form: (members) => formRedisCluster(members, replicas),
  };
}
const ZK3 = [
  [12182, 12888, 13888],
  [12183, 12889, 13889],
  [12184, 12890, 13890],
];
// An ensemble of its own for fault tests, which kill its leader while other suites use zookeeper3.
const ZK3_FAULTS = [
  [12185, 12891, 13891],
  [12186, 12892, 13892],
  [12187, 12893, 13893],
];
const ETCD3 = [
  [12479, 12480],
  [12579, 12580],
  [12679, 12680],
];
// A cluster of its own for fault tests, which kill its leader while other suites use etcd3.
const ETCD3_FAULTS = [
  [12779, 12780],
  [12879, 12880],
  [12979, 12980],
];

/**
 * A single PostgreSQL server. Without fsync (a test server needs no durability) unless
 * LOCK_SERVICES_DURABLE=1, which the benchmark sets to compare with MariaDB's defaults.
 */
function postgresPlan(name: string, envVar: string, port: number): TopologyPlan {
  return {
    kind: postgresKind,
    envVar,
    members: [{ name, ports: [port] }],
    get command() {
      return postgresBinary('postgres');
    },
    args: (member) => postgresArgs(member.ports[0], member.dir, process.env.LOCK_SERVICES_DURABLE === '1'),
    envValue: () => `postgres://${POSTGRES_USER}@127.0.0.1:${port}/${POSTGRES_DATABASE}`,
  };
}

const PLANS: Record<TopologyName, TopologyPlan> = {
  redis: {
    kind: redisKind,
    envVar: 'LOCK_TEST_REDIS_URL',
    members: [{ name: 'redis', ports: [16379] }],
    command: 'redis-server',
    args: (member) => redisArgs(member.ports[0], member.dir),
    envValue: () => 'redis://127.0.0.1:16379',
  },
  // A server of its own for fault tests, which restart it (losing its data) while other suites use redis.
  'redis-faults': {
    kind: redisKind,
    envVar: 'LOCK_TEST_FAULT_REDIS_URL',
    members: [{ name: 'redis-faults', ports: [16399] }],
    command: 'redis-server',
    args: (member) => redisArgs(member.ports[0], member.dir),
    envValue: () => 'redis://127.0.0.1:16399',
  },
  // A server of its own for restarts that load a snapshot (a test SAVEs, then restarts it): redis-faults is
  // restarted and stopped by the demo's fault test, which may run in another worker at the same time.
  'redis-restart': {
    kind: redisKind,
    envVar: 'LOCK_TEST_FAULT_REDIS_RESTART_URL',
    members: [{ name: 'redis-restart', ports: [16398] }],
    command: 'redis-server',
    args: (member) => redisArgs(member.ports[0], member.dir),
    envValue: () => 'redis://127.0.0.1:16398',
  },
  // Failover: Sentinel promotes the replica 1 s after the master stops answering (services.md: 2.4 s in all).
  // The variable names the Sentinel and the master's name; ask it for the master's address.
  'redis-sentinel': sentinelPlan('redis-sentinel', 'LOCK_TEST_FAULT_REDIS_SENTINEL', SENTINEL),
  // The same with two replicas: after a failover the new master still has one, so replica acknowledgement
  // (WAIT 1) goes on working.
  'redis-sentinel2': sentinelPlan('redis-sentinel2', 'LOCK_TEST_FAULT_REDIS_SENTINEL2', SENTINEL2),
  // Three masters sharing the 16 384 slots (services.md, "More servers"): one lock's keys share a hash tag,
  // so each lock lives on one of them. The variable lists every node; a client finds the rest itself.
  'redis-cluster': clusterPlan('redis-cluster', 'LOCK_TEST_REDIS_CLUSTER', CLUSTER_PORTS, 0),
  // The same with a replica per master, for failover tests (a master killed, its replica promoted after
  // CLUSTER_NODE_TIMEOUT_MS): the first three nodes start as masters.
  'redis-cluster-replicas': clusterPlan('redis-cluster-replicas', 'LOCK_TEST_FAULT_REDIS_CLUSTER', CLUSTER_REPLICAS_PORTS, 1),
  redis5: {
    kind: redisKind,
    envVar: 'LOCK_TEST_REDIS_URLS',
    members: REDIS5_PORTS.map((port, i) => ({ name: `redis5-${i + 1}`, ports: [port] })),
    command: 'redis-server',
    args: (member) => redisArgs(member.ports[0], member.dir),
    envValue: () => REDIS5_PORTS.map((port) => `redis://127.0.0.1:${port}`).join(','),
  },
  'redis5-faults': {
    kind: redisKind,
    envVar: 'LOCK_TEST_FAULT_REDIS_URLS',
    members: REDIS5_FAULT_PORTS.map((port, i) => ({ name: `redis5-faults-${i + 1}`, ports: [port] })),
    command: 'redis-server',
    args: (member) => redisArgs(member.ports[0], member.dir),
    envValue: () => REDIS5_FAULT_PORTS.map((port) => `redis://127.0.0.1:${port}`).join(','),
  },
  mariadb: {
    kind: mariadbKind,
    envVar: 'LOCK_TEST_MYSQL_URL',
    members: [{ name: 'mariadb', ports: [13306] }],
    command: 'mariadbd',
    args: (member) => mariadbArgs(member.ports[0], member.dir),
    envValue: () => `mysql://root:${MARIADB_PASSWORD}@127.0.0.1:13306/${MARIADB_DATABASE}`,
  },
  // A server of its own for fault tests, which restart it mid-sale while other suites use mariadb.
  'mariadb-faults': {
    kind: mariadbKind,
    envVar: 'LOCK_TEST_FAULT_MYSQL_URL',
    members: [{ name: 'mariadb-faults', ports: [13307] }],
    command: 'mariadbd',
    args: (member) => mariadbArgs(member.ports[0], member.dir),
    envValue: () => `mysql://root:${MARIADB_PASSWORD}@127.0.0.1:13307/${MARIADB_DATABASE}`,
  },
  zookeeper: {
    kind: zookeeperKind,
    envVar: 'LOCK_TEST_ZOOKEEPER',
    members: [{ name: 'zookeeper', ports: [12181] }],
    command: 'java',
    args: (member) => zookeeperArgs(member.dir),
    envValue: () => '127.0.0.1:12181',
  },
  zookeeper3: {
    kind: zookeeperKind,
    envVar: 'LOCK_TEST_ZOOKEEPER_ENSEMBLE',
    members: ZK3.map((ports, i) => ({ name: `zookeeper3-${i + 1}`, ports })),
    command: 'java',
    args: (member) => zookeeperArgs(member.dir),
    envValue: () => ZK3.map(([port]) => `127.0.0.1:${port}`).join(','),
  },
  'zookeeper3-faults': {
    kind: zookeeperKind,
    envVar: 'LOCK_TEST_FAULT_ZOOKEEPER_ENSEMBLE',
    members: ZK3_FAULTS.map((ports, i) => ({ name: `zookeeper3-faults-${i + 1}`, ports })),
    command: 'java',
    args: (member) => zookeeperArgs(member.dir),
    envValue: () => ZK3_FAULTS.map(([port]) => `127.0.0.1:${port}`).join(','),
  },
  etcd: {
    kind: etcdKind,
    envVar: 'LOCK_TEST_ETCD',
    members: [{ name: 'etcd', ports: [12379, 12380] }],
    command: 'etcd',
    args: (member) => etcdArgs(member, PLANS.etcd.members, `lock-test-etcd-${process.pid}`),
    envValue: () => 'http://127.0.0.1:12379',
  },
  etcd3: {
    kind: etcdKind,
    envVar: 'LOCK_TEST_ETCD_CLUSTER',
    members: ETCD3.map((ports, i) => ({ name: `etcd3-${i + 1}`, ports })),
    command: 'etcd',
    args: (member) => etcdArgs(member, PLANS.etcd3.members, `lock-test-etcd3-${process.pid}`),
    envValue: () => ETCD3.map(([port]) => `http://127.0.0.1:${port}`).join(','),
  },
  'etcd3-faults': {
    kind: etcdKind,
    envVar: 'LOCK_TEST_FAULT_ETCD_CLUSTER',
    members: ETCD3_FAULTS.map((ports, i) => ({ name: `etcd3-faults-${i + 1}`, ports })),
    command: 'etcd',
    args: (member) => etcdArgs(member, PLANS['etcd3-faults'].members, `lock-test-etcd3-faults-${process.pid}`),
    envValue: () => ETCD3_FAULTS.map(([port]) => `http://127.0.0.1:${port}`).join(','),
  },
  // TLS with client certificates and auth on, users with narrow roles (see etcd-secure.ts). Its certificates
  // and users are made at start: a server of your own cannot stand in for it.
  'etcd-secure': {
    kind: etcdSecureKind,
    envVar: 'LOCK_TEST_ETCD_SECURE',
    members: [{ name: ETCD_SECURE.member, ports: ETCD_SECURE.ports }],
    command: 'etcd',
    args: (member) => etcdSecureArgs(member, `lock-test-etcd-secure-${process.pid}`),
    envValue: () => `https://127.0.0.1:${ETCD_SECURE.ports[0]}`,
  },
  // memcached's standard port is 11211: never used here.
  memcached: {
    kind: memcachedKind,
    envVar: 'LOCK_TEST_MEMCACHED',
    members: [{ name: 'memcached', ports: [11311] }],
    command: 'memcached',
    args: (member) => memcachedArgs(member.ports[0]),
    envValue: () => '127.0.0.1:11311',
  },
  // A server of its own for fault tests, which kill and restart it (every lock in it is lost) while other
  // suites use memcached.
  'memcached-faults': {
    kind: memcachedKind,
    envVar: 'LOCK_TEST_FAULT_MEMCACHED',
    members: [{ name: 'memcached-faults', ports: [11312] }],
    command: 'memcached',
    args: (member) => memcachedArgs(member.ports[0]),
    envValue: () => '127.0.0.1:11312',
  },
  // TLS only, the default user off, the library's user limited by ACL (see redis-tls.ts). Its certificates
  // and users are made at start: a server of your own cannot stand in for it.
  'redis-tls': {
    kind: redisTlsKind,
    envVar: 'LOCK_TEST_REDIS_TLS',
    members: [{ name: REDIS_TLS.member, ports: [REDIS_TLS.port] }],
    command: 'redis-server',
    args: (member) => redisTlsArgs(member),
    envValue: () => `rediss://127.0.0.1:${REDIS_TLS.port}`,
  },
  // TLS required on every TCP connection, the library's user with table grants only (see mariadb-tls.ts).
  'mariadb-tls': {
    kind: mariadbTlsKind,
    envVar: 'LOCK_TEST_MYSQL_TLS',
    members: [{ name: MARIADB_TLS.member, ports: [MARIADB_TLS.port] }],
    command: 'mariadbd',
    args: (member) => mariadbTlsArgs(member),
    envValue: () => `mysql://127.0.0.1:${MARIADB_TLS.port}/${MARIADB_TLS.database}`,
  },
  // TCP through TLS only (hostssl), the library's role with the grants of docs/security.md only (see postgres-tls.ts).
  'postgres-tls': {
    kind: postgresTlsKind,
    envVar: 'LOCK_TEST_POSTGRES_TLS',
    members: [{ name: POSTGRES_TLS.member, ports: [POSTGRES_TLS.port] }],
    get command() {
      return postgresBinary('postgres');
    },
    args: (member) => postgresTlsArgs(member),
    envValue: () => `postgres://127.0.0.1:${POSTGRES_TLS.port}/${POSTGRES_TLS.database}?sslmode=verify-full`,
  },
  // PostgreSQL's standard port is 5432: never used here.
  postgres: postgresPlan('postgres', 'LOCK_TEST_POSTGRES_URL', 15432),
  // A server of its own for fault tests, which restart it mid-sale while other suites use postgres.
  'postgres-faults': postgresPlan('postgres-faults', 'LOCK_TEST_FAULT_POSTGRES_URL', 15433),
};

/** The environment variable of a topology (e.g. `LOCK_TEST_REDIS_URL`). */
export function envVarOf(name: TopologyName): string {
  return PLANS[name].envVar;
}

/** The kind of one member: the topology's, unless the member has its own. */
function kindOf(topology: TopologyName, memberName: string): ServerKind {
  const plan = PLANS[topology];
  return plan.members.find((member) => member.name === memberName)?.own?.kind ?? plan.kind;
}

/** Debian packages a set of topologies needs. */
export function packagesFor(names: readonly TopologyName[]): string[] {
  const kinds = names.flatMap((name) => [PLANS[name].kind, ...PLANS[name].members.flatMap((member) => (member.own ? [member.own.kind] : []))]);
  const packages = new Set(kinds.flatMap((kind) => [kind.packageName, ...(kind.extraPackages ?? [])]));
  if (packages.has('etcd-server')) packages.add('etcd-client');
  return [...packages];
}

/** A started (or user-provided) topology. */
export interface RunningTopology {
  readonly name: TopologyName;
  readonly envVar: string;
  readonly value: string;
  /** False when the user pointed the environment variable at their own server. */
  readonly managed: boolean;
  readonly startupMs: number;
}

/** Topologies this process started (and whose environment variable it set). */
const startedHere = new Set<TopologyName>();

/**
 * Starts a topology unless its environment variable is already set (then the user's server is used),
 * waits until every member really serves, and sets the variable for this process and its children.
 * Leftovers of an earlier run that died are stopped first, so a second run right after works.
 */
export async function startTopology(name: TopologyName): Promise<RunningTopology> {
  const plan = PLANS[name];
  const given = process.env[plan.envVar];
  if (given) return { name, envVar: plan.envVar, value: given, managed: false, startupMs: 0 };
  const started = Date.now();
  await stopTopology(name);
  const records: ServerRecord[] = [];
  for (const member of plan.members) {
    for (const port of member.ports) {
      if (!(await isPortFree(port))) {
        throw new Error(`port ${port} busy: ${name} needs 127.0.0.1:${port} (${member.name}); stop what uses it, or set ${plan.envVar} to use your own server`);
      }
    }
    const dir = join(instancesRoot(), member.name);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const kind = member.own?.kind ?? plan.kind;
    records.push({
      ...kind.runAs?.(),
      ...(kind.stopSignal ? { stopSignal: kind.stopSignal } : {}),
      name: member.name,
      topology: name,
      command: member.own?.command ?? plan.command,
      args: member.own ? member.own.args({ ...member, dir }) : plan.args({ ...member, dir }),
      cwd: dir,
      logFile: join(dir, 'server.log'),
      ports: member.ports,
      dir,
      pid: 0,
    });
  }
  try {
    for (const record of records) await kindOf(name, record.name).prepare?.(record, records);
    for (const record of records) launch(record);
    await Promise.all(records.map((record) => waitServing(kindOf(name, record.name), record)));
    for (const record of records) await kindOf(name, record.name).initialise?.(record);
    await plan.form?.(records);
  } catch (error) {
    await stopTopology(name);
    throw error;
  }
  const value = plan.envValue();
  process.env[plan.envVar] = value;
  startedHere.add(name);
  return { name, envVar: plan.envVar, value, managed: true, startupMs: Date.now() - started };
}

async function waitServing(kind: ServerKind, record: ServerRecord): Promise<void> {
  await waitUntil(
    `${record.name} (log: ${record.logFile})`,
    async () => {
      if (!isOurs(record)) throw new Error(`${record.name} exited during start-up; see ${record.logFile}`);
      return kind.ready(record);
    },
    kind.startTimeoutMs,
  );
}

/** Stops every member of a topology that this machine's state knows of, and removes its files. */
export async function stopTopology(name: TopologyName): Promise<void> {
  // The variable this process set points at a server that is going away: a later start must start one.
  if (startedHere.delete(name)) delete process.env[PLANS[name].envVar];
  const records = listRecords().filter((record) => record.topology === name);
  await Promise.all(records.map((record) => stopProcess(record)));
  for (const record of records) {
    removeRecord(record.name);
    rmSync(record.dir, { recursive: true, force: true });
  }
}

/**
 * Stops everything started by any run on this machine, except the topologies named in `keep` (servers a
 * user brought up with `npm run services -- up` and pointed the tests at through their variables).
 */
export async function stopAll(keep: readonly TopologyName[] = []): Promise<void> {
  for (const name of TOPOLOGY_NAMES) if (!keep.includes(name)) await stopTopology(name);
}

/** The topologies whose environment variable is set (the user's own servers), e.g. to keep at teardown. */
export function topologiesGivenByEnvironment(): TopologyName[] {
  return TOPOLOGY_NAMES.filter((name) => Boolean(process.env[PLANS[name].envVar]));
}

/** Synchronous last resort for exit handlers (which cannot await): SIGKILL every recorded server but `keep`'s. */
export function killAllNow(keep: readonly TopologyName[] = []): void {
  for (const record of listRecords()) {
    if (isOurs(record) && !keep.includes(record.topology as TopologyName)) {
      try {
        process.kill(record.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

/** Status of every recorded member. */
export function describeServers(): Array<{ name: string; topology: string; pid: number; running: boolean; ports: readonly number[] }> {
  return listRecords().map((record) => ({ name: record.name, topology: record.topology, pid: record.pid, running: isOurs(record), ports: record.ports }));
}

function member(name: string): ServerRecord {
  const record = readRecord(name);
  if (!record) throw new Error(`no server named ${name} is running (known: ${listRecords().map((r) => r.name).join(', ') || 'none'})`);
  return record;
}

/** Fault injection on one member, from any process: crash it, freeze it, thaw it, bring it back. */
export const faults = {
  kill: (name: string): Promise<void> => killProcess(member(name)),
  stop: (name: string): Promise<void> => stopProcess(member(name)),
  pause: (name: string): boolean => pauseProcess(member(name)),
  resume: (name: string): boolean => resumeProcess(member(name)),
  /** Starts the member again with the same directory and flags (data kept), and waits until it serves. */
  async restart(name: string): Promise<number> {
    const record = member(name);
    const started = Date.now();
    await stopProcess(record);
    launch(record);
    await waitServing(kindOf(record.topology as TopologyName, record.name), record);
    return Date.now() - started;
  },
  /** Member name of the current leader (ZooKeeper ensemble, etcd cluster), or undefined during an election. */
  async leader(topology: TopologyName): Promise<string | undefined> {
    for (const record of listRecords().filter((r) => r.topology === topology && isOurs(r))) {
      if (await kindOf(topology, record.name).isLeader?.(record)) return record.name;
    }
    return undefined;
  },
  members: (topology: TopologyName): string[] => listRecords().filter((r) => r.topology === topology).map((r) => r.name),
};

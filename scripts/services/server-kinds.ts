import { spawnSync } from 'node:child_process';
import { chownSync, copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { httpRequest, probe } from './probes';
import { runCommand, type CommandResult } from './run-command';
import type { ServerRecord } from './service-state';

/** How to prepare, start and probe one kind of server. Facts from shared/docs/services.md. */
export interface ServerKind {
  /** Debian package that provides the binary. */
  readonly packageName: string;
  /** Other Debian packages its set-up runs (e.g. openssl for certificates). */
  readonly extraPackages?: readonly string[];
  /** Creates the instance directory's files (config, data dir); runs once per fresh instance. */
  prepare?(record: ServerRecord, members: readonly ServerRecord[]): void | Promise<void>;
  /** True once the server really serves requests. */
  ready(record: ServerRecord): Promise<boolean>;
  /** Runs once after the first start (users, databases). */
  initialise?(record: ServerRecord): void | Promise<void>;
  /** Which member leads (ZooKeeper, etcd). */
  isLeader?(record: ServerRecord): Promise<boolean>;
  /** Member start timeout in ms. */
  readonly startTimeoutMs: number;
  /** The user and group to run the server as, when not as ourselves (see `postgresRunAs`). */
  runAs?(): { uid: number; gid: number } | undefined;
  /** The signal of a prompt, clean stop (default SIGTERM). */
  readonly stopSignal?: NodeJS.Signals;
}

export const redisKind: ServerKind = {
  packageName: 'redis-server',
  startTimeoutMs: 10_000,
  async ready(record) {
    const answer = await probe(record.ports[0], 'PING\r\n', 1_000, /\r\n/);
    return answer?.startsWith('+PONG') ?? false;
  },
};

export function redisArgs(port: number, dir: string): string[] {
  return ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no', '--logfile', ''];
}

/** A Redis that serves replicas: their first sync starts at once, not after 5 s of waiting for more of them. */
export function redisMasterArgs(port: number, dir: string): string[] {
  return [...redisArgs(port, dir), '--repl-diskless-sync-delay', '0'];
}

/** A replica of the Redis on 127.0.0.1:`masterPort`; a master once promoted, so it starts like one. */
export function redisReplicaArgs(port: number, dir: string, masterPort: number): string[] {
  return [...redisMasterArgs(port, dir), '--replicaof', '127.0.0.1', String(masterPort)];
}

/**
 * How long a Redis Cluster node may be unreachable before the others count it as failing and its replica
 * takes over, in ms. Redis' default is 15 000; tests want a failover within a couple of seconds.
 */
export const CLUSTER_NODE_TIMEOUT_MS = 1_000;

/**
 * A Redis Cluster node (`cluster-enabled`); its member carries [port, busPort], the bus being port + 10 000
 * (Redis' rule). Its view of the cluster lives in `nodes.conf` in its directory, so a restart rejoins.
 */
export function redisClusterNodeArgs(port: number, dir: string): string[] {
  return [
    ...redisMasterArgs(port, dir),
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    join(dir, 'nodes.conf'),
    '--cluster-node-timeout',
    String(CLUSTER_NODE_TIMEOUT_MS),
  ];
}

/** What one Sentinel watches, and how quickly it gives up on a master (ms). */
export interface SentinelWatch {
  readonly masterName: string;
  readonly masterPort: number;
  readonly replicaPorts: readonly number[];
  readonly downAfterMs: number;
  readonly failoverTimeoutMs: number;
}

/** A Sentinel's command line: its config file, which it rewrites (it must stay in the instance dir). */
export function redisSentinelArgs(dir: string): string[] {
  return [join(dir, 'sentinel.conf')];
}

/** Redis Sentinel (Debian's redis-sentinel); its member carries [port]. Facts in services.md, "More servers". */
export function redisSentinelKind(watch: SentinelWatch): ServerKind {
  const name = watch.masterName;
  return {
    packageName: 'redis-sentinel',
    startTimeoutMs: 10_000,
    prepare(record) {
      const lines = [
        `port ${record.ports[0]}`,
        'bind 127.0.0.1',
        'daemonize no',
        'logfile ""',
        `dir ${record.dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${watch.masterPort} 1`,
        `sentinel down-after-milliseconds ${name} ${watch.downAfterMs}`,
        `sentinel failover-timeout ${name} ${watch.failoverTimeoutMs}`,
        // Known from the start: otherwise a Sentinel that asked the master before the replica connected
        // learns of it only at its next INFO, 10 s later, and a failover before then has no candidate.
        ...watch.replicaPorts.map((port) => `sentinel known-replica ${name} 127.0.0.1 ${port}`),
      ];
      writeFileSync(join(record.dir, 'sentinel.conf'), `${lines.join('\n')}\n`);
    },
    async ready(record) {
      // A two-element array (host, port) once it monitors the master; a null array or an error before.
      const answer = await probe(record.ports[0], `SENTINEL get-master-addr-by-name ${name}\r\n`, 1_000, /^(-|\*-1\r\n|\*2\r\n(\$\d+\r\n[^\r]*\r\n){2})/);
      return answer?.startsWith('*2\r\n') ?? false;
    },
  };
}

export const MARIADB_PASSWORD = 'testpw';
export const MARIADB_DATABASE = 'locktest';

export function mariadbArgs(port: number, dir: string): string[] {
  return [
    '--no-defaults',
    `--user=${userInfo().username}`,
    `--datadir=${join(dir, 'data')}`,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    `--socket=${join(dir, 'mysqld.sock')}`,
    `--pid-file=${join(dir, 'mysqld.pid')}`,
    `--tmpdir=${dir}`,
    '--skip-name-resolve',
    '--skip-log-bin',
    '--innodb-log-file-size=8M',
    '--innodb-buffer-pool-size=64M',
    // The benchmark holds every MariaDB subject of a case open at once, 32 instances each with its own pool.
    '--max-connections=1000',
  ];
}

export const mariadbKind: ServerKind = {
  packageName: 'mariadb-server',
  startTimeoutMs: 30_000,
  async prepare(record) {
    if (existsSync(join(record.dir, 'data', 'mysql'))) return;
    const result = await runCommand(
      'mariadb-install-db',
      [
        '--no-defaults',
        `--user=${userInfo().username}`,
        `--datadir=${join(record.dir, 'data')}`,
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
        '--skip-name-resolve',
        '--innodb-log-file-size=8M',
      ],
    );
    if (result.status !== 0) throw new Error(`mariadb-install-db failed: ${result.stderr}`);
  },
  async ready(record) {
    // The server speaks first: a handshake packet carrying its version means it accepts connections.
    const greeting = await probe(record.ports[0], undefined, 1_000, /MariaDB|mysql/i);
    return greeting !== null && /MariaDB|mysql/i.test(greeting);
  },
  async initialise(record) {
    const sql = `ALTER USER 'root'@'localhost' IDENTIFIED BY '${MARIADB_PASSWORD}';
      ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '${MARIADB_PASSWORD}';
      CREATE DATABASE IF NOT EXISTS ${MARIADB_DATABASE};`;
    const socket = join(record.dir, 'mysqld.sock');
    let result = await runCommand('mariadb', ['--no-defaults', `--socket=${socket}`, '-uroot', '-e', sql]);
    if (result.status !== 0) {
      // A restarted instance already has the password.
      result = await runCommand('mariadb', ['--no-defaults', `--socket=${socket}`, '-uroot', `-p${MARIADB_PASSWORD}`, '-e', `CREATE DATABASE IF NOT EXISTS ${MARIADB_DATABASE};`]);
    }
    if (result.status !== 0) throw new Error(`MariaDB set-up failed: ${result.stderr}`);
  },
};

/** ZooKeeper's JVM command line (the plain `java` command: zkServer.sh writes outside the instance dir). */
export function zookeeperArgs(dir: string): string[] {
  return [
    '-Xmx256m',
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    '-cp',
    [join(dir, 'conf'), '/usr/share/java/zookeeper.jar', '/usr/share/java/slf4j-log4j12.jar', '/usr/share/java/log4j-1.2.jar'].join(':'),
    `-Dzookeeper.log.dir=${dir}`,
    '-Dzookeeper.root.logger=INFO,CONSOLE',
    'org.apache.zookeeper.server.quorum.QuorumPeerMain',
    join(dir, 'conf', 'zoo.cfg'),
  ];
}

/** ZooKeeper members carry [clientPort, quorumPort, electionPort]. */
export const zookeeperKind: ServerKind = {
  packageName: 'zookeeper',
  startTimeoutMs: 60_000,
  prepare(record, members) {
    const conf = join(record.dir, 'conf');
    const data = join(record.dir, 'data');
    mkdirSync(conf, { recursive: true });
    mkdirSync(data, { recursive: true });
    copyFileSync('/etc/zookeeper/conf_example/log4j.properties', join(conf, 'log4j.properties'));
    const lines = [
      // A short tick allows session timeouts from 1 s (2 ticks) to 10 s (20 ticks): fast expiry tests.
      'tickTime=500',
      'initLimit=20',
      'syncLimit=10',
      `dataDir=${data}`,
      `clientPort=${record.ports[0]}`,
      'clientPortAddress=127.0.0.1',
      'admin.enableServer=false',
      '4lw.commands.whitelist=ruok,srvr,stat,mntr,conf',
      'maxClientCnxns=0',
    ];
    if (members.length > 1) {
      members.forEach((member, index) => lines.push(`server.${index + 1}=127.0.0.1:${member.ports[1]}:${member.ports[2]}`));
      writeFileSync(join(data, 'myid'), `${members.indexOf(record) + 1}\n`);
    }
    writeFileSync(join(conf, 'zoo.cfg'), `${lines.join('\n')}\n`);
  },
  async ready(record) {
    const answer = await probe(record.ports[0], 'srvr', 2_000);
    return answer !== null && /Mode: (standalone|leader|follower)/.test(answer);
  },
  async isLeader(record) {
    const answer = await probe(record.ports[0], 'srvr', 2_000);
    return answer !== null && /Mode: (leader|standalone)/.test(answer);
  },
};

/** etcd members carry [clientPort, peerPort]. */
export function etcdArgs(record: { name: string; dir: string; ports: readonly number[] }, members: readonly { name: string; ports: readonly number[] }[], clusterToken: string): string[] {
  const client = `http://127.0.0.1:${record.ports[0]}`;
  const peer = `http://127.0.0.1:${record.ports[1]}`;
  return [
    '--name', record.name,
    '--data-dir', join(record.dir, 'data'),
    '--logger=zap',
    '--log-level=warn',
    '--listen-client-urls', client,
    '--advertise-client-urls', client,
    '--listen-peer-urls', peer,
    '--initial-advertise-peer-urls', peer,
    '--initial-cluster', members.map((member) => `${member.name}=http://127.0.0.1:${member.ports[1]}`).join(','),
    '--initial-cluster-state', 'new',
    '--initial-cluster-token', clusterToken,
    // Fast elections: a killed leader is replaced in well under a second (services.md).
    '--heartbeat-interval=50',
    '--election-timeout=500',
  ];
}

interface EtcdStatus {
  header?: { member_id?: string };
  leader?: string;
}

export const etcdKind: ServerKind = {
  packageName: 'etcd-server',
  startTimeoutMs: 30_000,
  async ready(record) {
    const body = await httpRequest(record.ports[0], '/health', undefined, 1_000);
    return body !== null && /"health":\s*"true"/.test(body);
  },
  async isLeader(record) {
    const body = await httpRequest(record.ports[0], '/v3/maintenance/status', '{}', 1_000);
    if (!body) return false;
    try {
      const status = JSON.parse(body) as EtcdStatus;
      return status.leader !== undefined && status.leader === status.header?.member_id;
    } catch {
      return false;
    }
  },
};

/**
 * memcached (Debian's package, 1.6): in the foreground, on loopback only, no UDP, 64 MB. As root it needs
 * `-u <user>` (it refuses to run as root otherwise); the current user works for root and others alike.
 */
export function memcachedArgs(port: number): string[] {
  return ['-u', userInfo().username, '-l', '127.0.0.1', '-p', String(port), '-U', '0', '-m', '64', '-c', '1024'];
}

export const memcachedKind: ServerKind = {
  packageName: 'memcached',
  startTimeoutMs: 10_000,
  async ready(record) {
    const answer = await probe(record.ports[0], 'version\r\n', 1_000, /\r\n/);
    return answer?.startsWith('VERSION ') ?? false;
  },
};

export const POSTGRES_USER = 'postgres';
export const POSTGRES_DATABASE = 'locktest';

/**
 * A PostgreSQL program of Debian's `postgresql` package: `/usr/lib/postgresql/<major>/bin/<name>`, the newest
 * major installed (the package installs no `postgres` or `initdb` on the PATH). Resolved when called, so that
 * a machine where the tests install the package first finds it afterwards.
 */
export function postgresBinary(name: 'postgres' | 'initdb' | 'psql' | 'pg_isready'): string {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((entry) => /^\d+$/.test(entry) && existsSync(join(root, entry, 'bin', name))) : [];
  if (majors.length === 0) throw new Error(`PostgreSQL's ${name} not found under ${root}: install Debian's postgresql package (apt-get install -y postgresql)`);
  return join(root, String(Math.max(...majors.map(Number))), 'bin', name);
}

/**
 * Who runs the server: PostgreSQL refuses to run as root, so as root it runs as the `postgres` user the
 * Debian package creates (the instance directory is given to that user); as anyone else, as themselves.
 */
export function postgresRunAs(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const id = (flag: '-u' | '-g'): number => Number(spawnSync('id', [flag, POSTGRES_USER], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  const gid = id('-g');
  if (!Number.isInteger(uid) || uid <= 0 || !Number.isInteger(gid)) throw new Error(`no "${POSTGRES_USER}" user to run PostgreSQL as (root may not): install Debian's postgresql package`);
  return { uid, gid };
}

/**
 * The server's command line: its own data directory, one port on loopback, its socket in the instance
 * directory. `durable: false` (tests) turns fsync off, which a test server never needs and which makes
 * every commit cheaper; benchmarks keep the default, like MariaDB's.
 */
export function postgresArgs(port: number, dir: string, durable: boolean): string[] {
  return [
    '-D', join(dir, 'data'),
    '-p', String(port),
    '-k', dir,
    '-c', 'listen_addresses=127.0.0.1',
    // As MariaDB's: the benchmark's PostgreSQL subjects are open at once, 32 instances each.
    '-c', 'max_connections=1000',
    '-c', 'shared_buffers=64MB',
    '-c', 'logging_collector=off',
    ...(durable ? [] : ['-c', 'fsync=off', '-c', 'full_page_writes=off']),
  ];
}

/** The first message of PostgreSQL's protocol (3.0) for `user` on `database`. */
function postgresStartupMessage(user: string, database: string): Buffer {
  const body = Buffer.from(`user\0${user}\0database\0${database}\0\0`, 'latin1');
  const message = Buffer.alloc(8 + body.length);
  message.writeInt32BE(message.length, 0);
  message.writeInt32BE(196_608, 4); // protocol 3.0
  body.copy(message, 8);
  return message;
}

/** PostgreSQL (Debian's postgresql, 15 on bookworm); facts in services.md, "More servers". */
export const postgresKind: ServerKind = {
  packageName: 'postgresql',
  startTimeoutMs: 30_000,
  // Fast shutdown: open transactions roll back, clients are disconnected. SIGTERM ("smart") would wait
  // for every client (a connection pool) to leave first.
  stopSignal: 'SIGINT',
  runAs: postgresRunAs,
  async prepare(record) {
    const data = join(record.dir, 'data');
    const runAs = postgresRunAs();
    if (runAs) chownSync(record.dir, runAs.uid, runAs.gid);
    if (existsSync(join(data, 'PG_VERSION'))) return;
    const result = await runCommand(postgresBinary('initdb'), ['-D', data, '-A', 'trust', '-U', POSTGRES_USER, '-E', 'UTF8', '--locale=C', '--no-sync'], {
      cwd: record.dir,
      timeoutMs: 60_000,
      ...runAs,
    });
    if (result.status !== 0) throw new Error(`initdb failed: ${result.stderr || result.error?.message}`);
  },
  async ready(record) {
    // Trust authentication: a server that accepts connections answers AuthenticationOk ('R', length 8, 0);
    // one still starting up or recovering answers an error ('E') instead.
    const answer = await probe(record.ports[0], postgresStartupMessage(POSTGRES_USER, 'postgres'), 1_000, /^(R\0\0\0\x08\0\0\0\0|E)/);
    return answer?.startsWith('R\0\0\0\x08\0\0\0\0') ?? false;
  },
  async initialise(record) {
    const psql = (sql: string): Promise<CommandResult> =>
      runCommand(postgresBinary('psql'), ['-X', '-q', '-t', '-A', '-h', '127.0.0.1', '-p', String(record.ports[0]), '-U', POSTGRES_USER, '-d', 'postgres', '-c', sql], { timeoutMs: 30_000 });
    const exists = await psql(`SELECT 1 FROM pg_database WHERE datname = '${POSTGRES_DATABASE}'`);
    if (exists.status !== 0) throw new Error(`PostgreSQL set-up failed: ${String(exists.stderr)}`);
    if (String(exists.stdout).trim() === '1') return;
    const created = await psql(`CREATE DATABASE ${POSTGRES_DATABASE}`);
    if (created.status !== 0) throw new Error(`PostgreSQL set-up failed: ${String(created.stderr)}`);
  },
};

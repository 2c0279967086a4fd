import { probe, waitUntil } from './probes';
import { runCommand } from './run-command';
import type { ServerRecord } from './service-state';

/** One node as `CLUSTER NODES` describes it. */
export interface ClusterNode {
  readonly id: string;
  readonly port: number;
  readonly role: 'master' | 'replica';
  /** For a replica, the id of its master. */
  readonly masterId: string | undefined;
  /** Marked failing (`fail` / `fail?`) by the node that answered. */
  readonly failing: boolean;
  /** Slot ranges a master serves, e.g. [[0, 5460]]. */
  readonly slots: ReadonlyArray<readonly [number, number]>;
}

/** Parses the text of `CLUSTER NODES`. */
export function parseClusterNodes(text: string): ClusterNode[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [id, address, flags, master, , , , , ...slotFields] = line.split(' ');
      const port = Number(address.split('@')[0].split(':').pop());
      const flagList = flags.split(',');
      const slots = slotFields
        .filter((field) => !field.startsWith('['))
        .map((field): [number, number] => {
          const [from, to] = field.split('-').map(Number);
          return [from, to ?? from];
        });
      return {
        id,
        port,
        role: flagList.includes('master') ? 'master' : 'replica',
        masterId: master === '-' ? undefined : master,
        failing: flagList.includes('fail') || flagList.includes('fail?'),
        slots,
      } satisfies ClusterNode;
    });
}

/** `CLUSTER NODES` as the node on `port` sees it; empty when it does not answer. */
export async function clusterNodes(port: number, timeoutMs = 1_000): Promise<ClusterNode[]> {
  const answer = await probe(port, 'CLUSTER NODES\r\n', timeoutMs, /^\$(\d+)\r\n[\s\S]*\r\n$/);
  if (!answer?.startsWith('$')) return [];
  return parseClusterNodes(answer.slice(answer.indexOf('\r\n') + 2));
}

async function clusterState(port: number): Promise<string | undefined> {
  const answer = await probe(port, 'CLUSTER INFO\r\n', 1_000, /cluster_state:\w+/);
  return /cluster_state:(\w+)/.exec(answer ?? '')?.[1];
}

/**
 * True when the master on `port` has `replicas` replicas that acknowledge its writes: a write of the probe's
 * own (a key of the master's slots, found by trying names until one is not answered MOVED, gone after a
 * second), then `WAIT replicas 100`. A replica that reports `master_link_status:up` is not enough: the
 * master may not count it yet, and a `WAIT` right after the cluster formed then answered 0 for 500 ms.
 */
async function acknowledgedByReplicas(port: number, replicas: number): Promise<boolean> {
  for (let name = 0; name < 64; name++) {
    const answer = await probe(port, `SET cluster-formed-probe:${name} 1 PX 1000\r\nWAIT ${replicas} 100\r\n`, 1_000, /\r\n[:-][^\r\n]*\r\n$/);
    if (answer === null) return false;
    if (answer.startsWith('-MOVED')) continue;
    return Number(/\r\n:(\d+)\r\n$/.exec(answer)?.[1] ?? 0) >= replicas;
  }
  return false;
}

/**
 * Makes a cluster of the started nodes (facts in services.md, "More servers"): the first
 * `members / (replicasPerMaster + 1)` become masters with the 16 384 slots split between them, the others
 * their replicas. Resolves once every node reports `cluster_state:ok`, agrees on the masters, and every
 * master's writes are acknowledged by its replicas (a failover test needs a replica that can take over, and
 * `replicaAck` a replica that answers `WAIT`).
 */
export async function formRedisCluster(members: readonly ServerRecord[], replicasPerMaster: number, timeoutMs = 30_000): Promise<void> {
  const ports = members.map((member) => member.ports[0]);
  // Not spawnSync: the other servers starting beside it are probed meanwhile (see runCommand).
  const created = await runCommand('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', String(replicasPerMaster), '--cluster-yes'], { timeoutMs });
  if (created.status !== 0) throw new Error(`redis-cli --cluster create failed (exit ${created.status ?? 'none: ended by a signal or its timeout'}): ${created.stdout.slice(-1_000)}${created.stderr}${created.error?.message ?? ''}`);
  const masters = ports.length / (replicasPerMaster + 1);
  await waitUntil(
    `the Redis Cluster on ${ports.join(', ')} to report cluster_state:ok`,
    async () => {
      for (const port of ports) {
        if ((await clusterState(port)) !== 'ok') return false;
        const nodes = await clusterNodes(port);
        if (nodes.length !== ports.length || nodes.filter((node) => node.role === 'master').length !== masters) return false;
      }
      return true;
    },
    timeoutMs,
    100,
  );
  if (replicasPerMaster === 0) return;
  const masterPorts = (await clusterNodes(ports[0])).filter((node) => node.role === 'master').map((node) => node.port);
  await waitUntil(
    'every Redis Cluster master to have its writes acknowledged by its replicas (WAIT)',
    async () => {
      for (const port of masterPorts) if (!(await acknowledgedByReplicas(port, replicasPerMaster))) return false;
      return true;
    },
    timeoutMs,
    100,
  );
}

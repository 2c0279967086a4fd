// Throwaway Redis, MariaDB, PostgreSQL, ZooKeeper, etcd and memcached servers on loopback, from Debian's packages.
// Usage: npm run services -- up [topology…] | down | status
//   topologies: redis, redis5, redis-cluster, redis-cluster-replicas, mariadb, postgres, zookeeper, zookeeper3, etcd, etcd3, etcd-secure,
//   memcached, and the fault ones (default for "up": what npm test starts, SHARED_TOPOLOGIES)
import { describeServers, ensureDebianPackages, packagesFor, SHARED_TOPOLOGIES, startTopology, stopAll, TOPOLOGY_NAMES, type TopologyName } from './services/index';

async function main(): Promise<void> {
  const [command = 'status', ...rest] = process.argv.slice(2);
  if (command === 'up') {
    const names = (rest.length ? rest : SHARED_TOPOLOGIES) as readonly TopologyName[];
    const unknown = names.filter((name) => !TOPOLOGY_NAMES.includes(name));
    if (unknown.length) throw new Error(`unknown topology ${unknown.join(', ')}; known: ${TOPOLOGY_NAMES.join(', ')}`);
    ensureDebianPackages(packagesFor(names));
    const running = await Promise.all(names.map((name) => startTopology(name)));
    for (const topology of running) {
      console.log(`${topology.envVar}=${topology.value}  # ${topology.managed ? `started in ${topology.startupMs} ms` : 'yours (from the environment)'}`);
    }
  } else if (command === 'down') {
    await stopAll();
    console.log('all test servers stopped');
  } else if (command === 'status') {
    const servers = describeServers();
    if (servers.length === 0) console.log('no test servers running');
    for (const server of servers) console.log(`${server.name.padEnd(14)} ${server.running ? 'running' : 'gone   '} pid ${server.pid} ports ${server.ports.join(',')}`);
  } else {
    throw new Error(`usage: npm run services -- up [${TOPOLOGY_NAMES.join('|')} …] | down | status`);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});

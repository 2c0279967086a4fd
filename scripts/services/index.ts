export { ensureDebianPackages, SERVER_PACKAGES } from './debian-packages';
export { startTopologies, stopStarted } from './start-topologies';
export {
  describeServers,
  envVarOf,
  faults,
  killAllNow,
  packagesFor,
  SHARED_TOPOLOGIES,
  startTopology,
  stopAll,
  stopTopology,
  topologiesGivenByEnvironment,
  TOPOLOGY_NAMES,
  type RunningTopology,
  type TopologyName,
} from './topologies';
export { clusterNodes, parseClusterNodes, type ClusterNode } from './redis-cluster';
export { REDIS_TLS, redisTlsCaFile } from './redis-tls';
export { lockTableGrants, MARIADB_TLS, mariadbTlsCaFile, semaphoreTableGrants } from './mariadb-tls';
export { POSTGRES_TLS, postgresLockGrants, postgresSemaphoreGrants, postgresTlsCaFile } from './postgres-tls';

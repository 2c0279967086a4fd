import { envVarOf, packagesFor, parseClusterNodes, TOPOLOGY_NAMES } from './index';

describe('services tool', () => {
  it('names an environment variable per topology, so users can bring their own servers', () => {
    expect(TOPOLOGY_NAMES.map(envVarOf)).toEqual([
      'LOCK_TEST_REDIS_URL',
      'LOCK_TEST_FAULT_REDIS_URL',
      'LOCK_TEST_FAULT_REDIS_RESTART_URL',
      'LOCK_TEST_FAULT_REDIS_SENTINEL',
      'LOCK_TEST_FAULT_REDIS_SENTINEL2',
      'LOCK_TEST_REDIS_CLUSTER',
      'LOCK_TEST_FAULT_REDIS_CLUSTER',
      'LOCK_TEST_REDIS_URLS',
      'LOCK_TEST_FAULT_REDIS_URLS',
      'LOCK_TEST_MYSQL_URL',
      'LOCK_TEST_FAULT_MYSQL_URL',
      'LOCK_TEST_ZOOKEEPER',
      'LOCK_TEST_ZOOKEEPER_ENSEMBLE',
      'LOCK_TEST_FAULT_ZOOKEEPER_ENSEMBLE',
      'LOCK_TEST_ETCD',
      'LOCK_TEST_ETCD_CLUSTER',
      'LOCK_TEST_FAULT_ETCD_CLUSTER',
      'LOCK_TEST_MEMCACHED',
      'LOCK_TEST_FAULT_MEMCACHED',
      'LOCK_TEST_POSTGRES_URL',
      'LOCK_TEST_FAULT_POSTGRES_URL',
      'LOCK_TEST_ETCD_SECURE',
      'LOCK_TEST_REDIS_TLS',
      'LOCK_TEST_MYSQL_TLS',
      'LOCK_TEST_POSTGRES_TLS',
    ]);
  });

  it('maps topologies to the Debian packages that provide them', () => {
    expect(packagesFor(['redis', 'redis5', 'etcd3']).sort()).toEqual(['etcd-client', 'etcd-server', 'redis-server']);
    expect(packagesFor(['mariadb', 'zookeeper3'])).toEqual(['mariadb-server', 'zookeeper']);
    // A member of another kind brings its own package: the Sentinel beside its Redis servers.
    expect(packagesFor(['redis-sentinel'])).toEqual(['redis-server', 'redis-sentinel']);
    expect(packagesFor(['memcached', 'memcached-faults'])).toEqual(['memcached']);
    // A set-up that makes certificates brings openssl.
    expect(packagesFor(['etcd-secure']).sort()).toEqual(['etcd-client', 'etcd-server', 'openssl']);
    expect(packagesFor(['redis-tls', 'mariadb-tls']).sort()).toEqual(['mariadb-server', 'openssl', 'redis-server']);
    expect(packagesFor(['postgres', 'postgres-faults'])).toEqual(['postgresql']);
    expect(packagesFor(['postgres-tls'])).toEqual(['postgresql', 'openssl']);
    // A Cluster needs nothing but redis-server (redis-cli, which forms it, comes with it).
    expect(packagesFor(['redis-cluster', 'redis-cluster-replicas'])).toEqual(['redis-server']);
  });

  it('reads CLUSTER NODES: roles, masters of replicas, failing nodes and slot ranges', () => {
    const text = [
      'a1 127.0.0.1:16710@26710 myself,master - 0 0 1 connected 0-5460',
      'b2 127.0.0.1:16711@26711 master,fail - 0 0 2 connected 5461-10922 [5462->-x]',
      'c3 127.0.0.1:16713@26713 slave a1 0 0 1 connected',
    ].join('\n');
    expect(parseClusterNodes(text)).toEqual([
      { id: 'a1', port: 16710, role: 'master', masterId: undefined, failing: false, slots: [[0, 5460]] },
      { id: 'b2', port: 16711, role: 'master', masterId: undefined, failing: true, slots: [[5461, 10922]] },
      { id: 'c3', port: 16713, role: 'replica', masterId: 'a1', failing: false, slots: [] },
    ]);
  });
});

import { envVarOf, packagesFor, TOPOLOGY_NAMES } from './index';

describe('services tool', () => {
  it('names an environment variable per topology, so users can bring their own servers', () => {
    expect(TOPOLOGY_NAMES.map(envVarOf)).toEqual([
      'LOCK_TEST_REDIS_URL',
      'LOCK_TEST_FAULT_REDIS_URL',
      'LOCK_TEST_FAULT_REDIS_RESTART_URL',
      'LOCK_TEST_FAULT_REDIS_SENTINEL',
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
  });
});

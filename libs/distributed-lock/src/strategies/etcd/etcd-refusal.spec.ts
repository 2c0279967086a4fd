import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';
import { etcdPermissionDenied } from './etcd-refusal';

// etcd3's error classes, as it throws them: `name` stays "Error", the class tells them apart.
class EtcdPermissionDeniedError extends Error {}
class EtcdAuthenticationFailedError extends Error {}

describe('etcdPermissionDenied', () => {
  const refusal = { strategy: 'etcd', operation: 'acquire', namespace: 'dlock/', user: 'locksvc', key: 'orders:1' };

  it('names the role grant for a permission denied, and keeps the answer as cause', () => {
    const answer = new EtcdPermissionDeniedError('7 PERMISSION_DENIED: etcdserver: permission denied');
    const error = etcdPermissionDenied(answer, refusal);
    expect(error).toBeInstanceOf(LockPermissionDeniedError);
    expect(error).toMatchObject({ strategy: 'etcd', operation: 'acquire', key: 'orders:1', cause: answer });
    expect(error?.grant).toContain('etcdctl role grant-permission <role> --prefix=true readwrite dlock/');
    expect(error?.grant).toContain('etcdctl user grant-role locksvc <role>');
  });

  it('says to check the credentials when they were refused', () => {
    const error = etcdPermissionDenied(new EtcdAuthenticationFailedError('3 INVALID_ARGUMENT: etcdserver: authentication failed, invalid user ID or password'), refusal);
    expect(error?.grant).toContain('etcd refused the credentials of user "locksvc"');
  });

  it('leaves every other error alone', () => {
    expect(etcdPermissionDenied(new Error('14 UNAVAILABLE: No connection established'), refusal)).toBeUndefined();
    expect(etcdPermissionDenied('permission denied', refusal)).toBeUndefined();
  });
});

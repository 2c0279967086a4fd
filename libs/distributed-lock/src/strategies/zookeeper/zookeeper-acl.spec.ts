import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';
import { zkPermissionDenied } from './zookeeper-acl';

describe('zkPermissionDenied', () => {
  const refusal = { strategy: 'zookeeper', operation: 'acquire', basePath: '/dlock', key: 'orders:1' };

  it('names the ACL the digest identity needs for a NOAUTH answer, and keeps the answer as cause', () => {
    const answer = new Error('-102 not authenticated');
    const error = zkPermissionDenied(answer, { ...refusal, user: 'locksvc' });
    expect(error).toBeInstanceOf(LockPermissionDeniedError);
    expect(error).toMatchObject({ strategy: 'zookeeper', operation: 'acquire', key: 'orders:1', cause: answer });
    expect(error?.grant).toContain('"locksvc" needs cdrwa on /dlock');
  });

  it('says to set digestAuth when the session has none', () => {
    expect(zkPermissionDenied(new Error('-102 not authenticated'), { ...refusal, user: undefined })?.grant).toContain('set `digestAuth`');
  });

  it('leaves every other error alone', () => {
    expect(zkPermissionDenied(new Error('-4 connection loss'), { ...refusal, user: 'locksvc' })).toBeUndefined();
  });
});

import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';
import { REDIS_SCRIPT_COMMANDS, REDLOCK_EXTRA_SCRIPT_COMMANDS, redisAclRules, redisCallError } from './redis-acl';
import { ACQUIRE_SCRIPT, EXTEND_SCRIPT, HELD_SCRIPT, LEAVE_QUEUE_SCRIPT, RELEASE_SCRIPT } from './redis-lock.scripts';
import { REDLOCK_ACQUIRE_SCRIPT, REDLOCK_EXTEND_SCRIPT, REDLOCK_RELEASE_SCRIPT } from './redlock.scripts';
import { PERMIT_ACQUIRE_SCRIPT, PERMIT_EXTEND_SCRIPT, PERMIT_HELD_SCRIPT, PERMIT_LEAVE_SCRIPT, PERMIT_RELEASE_SCRIPT } from './redis-semaphore.scripts';

describe('Redis ACL rules', () => {
  it('name every command the single-instance scripts call, the semaphore\'s included, and no other', () => {
    const called = new Set<string>();
    for (const script of [ACQUIRE_SCRIPT, RELEASE_SCRIPT, EXTEND_SCRIPT, LEAVE_QUEUE_SCRIPT, HELD_SCRIPT, PERMIT_ACQUIRE_SCRIPT, PERMIT_RELEASE_SCRIPT, PERMIT_EXTEND_SCRIPT, PERMIT_LEAVE_SCRIPT, PERMIT_HELD_SCRIPT]) {
      for (const match of script.source.matchAll(/redis\.(?:p?call)\('([A-Za-z]+)'/g)) called.add(match[1].toLowerCase());
    }
    expect([...REDIS_SCRIPT_COMMANDS].sort()).toEqual([...called].sort());
  });

  it("with redlock, add every command Redlock's own scripts call", () => {
    const called = new Set<string>(REDIS_SCRIPT_COMMANDS);
    for (const script of [REDLOCK_ACQUIRE_SCRIPT, REDLOCK_RELEASE_SCRIPT, REDLOCK_EXTEND_SCRIPT]) {
      for (const match of script.source.matchAll(/redis\.(?:p?call)\('([A-Za-z]+)'/g)) called.add(match[1].toLowerCase());
    }
    expect([...REDIS_SCRIPT_COMMANDS, ...REDLOCK_EXTRA_SCRIPT_COMMANDS].sort()).toEqual([...called].sort());
    const rules = redisAclRules('dlock:redlock:', true);
    for (const command of called) expect(rules.split(' ')).toContain(`+${command}`);
  });

  it('limit keys and channels to the namespace', () => {
    expect(redisAclRules('app:')).toMatch(/^resetkeys ~app:\* resetchannels &app:\* -@all \+evalsha /);
  });

  it('turn a NOPERM reply into a typed error naming the rules to grant', () => {
    const error = redisCallError(new Error("NOPERM this user has no permissions to run the 'evalsha' command"), { strategy: 'redis', namespace: 'dlock:', operation: 'acquire', key: 'k' });
    expect(error).toBeInstanceOf(LockPermissionDeniedError);
    expect((error as LockPermissionDeniedError).grant).toBe(`ACL SETUSER <user> ${redisAclRules('dlock:')}`);
    expect((error as Error).message).toContain('~dlock:*');
  });

  it('blank the credentials a refused HELLO carries and say to check them, and leave other errors as they are', () => {
    const failed = Object.assign(new Error('WRONGPASS invalid username-password pair'), { command: { name: 'hello', args: ['3', 'AUTH', 'app', 's3cret'] } });
    const error = redisCallError(failed, { strategy: 'redis', namespace: 'dlock:', operation: 'acquire' });
    expect(error).toBeInstanceOf(LockPermissionDeniedError);
    expect((error as Error).cause).toBe(failed);
    expect(JSON.stringify(failed.command)).not.toContain('s3cret');
    const other = new Error('ECONNREFUSED');
    expect(redisCallError(other, { strategy: 'redis', namespace: 'dlock:', operation: 'acquire' })).toBe(other);
  });
});

import { LockPermissionDeniedError } from '../../errors/lock-permission-denied.error';
import { REDIS_SCRIPT_COMMANDS, REDLOCK_EXTRA_SCRIPT_COMMANDS, redisAclRules, redisCallError } from './redis-acl';
import * as lockScripts from './redis-lock.scripts';
import * as redlockScripts from './redlock.scripts';
import * as semaphoreScripts from './redis-semaphore.scripts';

/** Every Lua script a module exports (each export with a source): a script added later is checked too. */
function scriptsOf(module: Record<string, unknown>): Array<{ source: string }> {
  return Object.values(module).filter((value): value is { source: string } => typeof (value as { source?: unknown } | null)?.source === 'string');
}

describe('Redis ACL rules', () => {
  it('name every command the single-instance scripts call, the semaphore\'s included, and no other', () => {
    const called = new Set<string>();
    for (const script of [...scriptsOf(lockScripts), ...scriptsOf(semaphoreScripts)]) {
      for (const match of script.source.matchAll(/redis\.(?:p?call)\('([A-Za-z]+)'/g)) called.add(match[1].toLowerCase());
    }
    expect([...REDIS_SCRIPT_COMMANDS].sort()).toEqual([...called].sort());
  });

  it("with redlock, add every command Redlock's own scripts call", () => {
    const called = new Set<string>(REDIS_SCRIPT_COMMANDS);
    for (const script of scriptsOf(redlockScripts)) {
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

import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { SCHEDULED_LOCK_DEFAULTS, validateScheduledLockOptions } from './scheduled-lock-options';

describe('validateScheduledLockOptions', () => {
  it('applies the defaults and rounds fractions up', () => {
    expect(validateScheduledLockOptions({ lockAtMostFor: 1000 / 3 }, 'job')).toEqual({
      name: undefined,
      lockAtMostFor: 334,
      lockAtLeastFor: SCHEDULED_LOCK_DEFAULTS.lockAtLeastFor,
      perRun: SCHEDULED_LOCK_DEFAULTS.perRun,
    });
  });

  it.each([
    ['no lockAtMostFor', {}, /lockAtMostFor.*required/],
    ['a lease under 10 ms', { lockAtMostFor: 5 }, /lockAtMostFor/],
    ['lockAtLeastFor above lockAtMostFor', { lockAtMostFor: 1_000, lockAtLeastFor: 2_000 }, /must not exceed/],
    ['a negative lockAtLeastFor', { lockAtMostFor: 1_000, lockAtLeastFor: -1 }, /lockAtLeastFor/],
    ['a perRun that is not a boolean', { lockAtMostFor: 1_000, perRun: 'yes' }, /perRun/],
    ['a blank name', { lockAtMostFor: 1_000, name: ' ' }, /name/],
    ['an unknown option', { lockAtMostFor: 1_000, lockAtMost: 5 }, /unknown option/],
  ])('refuses %s', (_what, input, message) => {
    expect(() => validateScheduledLockOptions(input, 'Job#run @ScheduledLock')).toThrow(InvalidLockOptionsError);
    expect(() => validateScheduledLockOptions(input, 'Job#run @ScheduledLock')).toThrow(message);
  });
});

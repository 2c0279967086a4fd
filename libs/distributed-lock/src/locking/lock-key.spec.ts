import { InvalidLockKeyError } from '../errors/invalid-lock-key.error';
import { validateLockKey } from './lock-key';

describe('validateLockKey', () => {
  it('accepts printable keys, whole astral characters and U+FFFD', () => {
    for (const key of ['stock:42', 'emoji:🔒', 'replacement:\uFFFD', 'café', 'k ', 'x'.repeat(512)]) expect(validateLockKey(key)).toBe(key);
  });

  it('refuses keys no backend could store as one distinct lock', () => {
    const bad = ['', '   ', 'x'.repeat(513), 'line\nbreak', 'nul\u0000', 'lone:\uD800', 'lone:\uDC00', 'reversed:\uDC00\uD800', 'cut:' + '🔒'.slice(0, 1)];
    for (const key of bad) expect(() => validateLockKey(key)).toThrow(InvalidLockKeyError);
  });

  it('says what to do about a lone surrogate', () => {
    expect(() => validateLockKey('cut:\uD83D')).toThrow(/lone UTF-16 surrogate.*whole characters/);
  });
});

import { InvalidLockKeyError } from '../errors/invalid-lock-key.error';
import { compileKeyTemplate, toKeyResolver } from './key-template';

describe('key templates', () => {
  it('resolves positions and property paths', () => {
    expect(compileKeyTemplate('stock:{0}')(['sku-1'])).toBe('stock:sku-1');
    expect(compileKeyTemplate('order:{0.userId}:{1}')([{ userId: 'u1' }, 7])).toBe('order:u1:7');
    expect(compileKeyTemplate('deep:{0.a.b}')([{ a: { b: true } }])).toBe('deep:true');
    expect(compileKeyTemplate('fixed')([])).toBe('fixed');
    expect(compileKeyTemplate('big:{0}')([10n])).toBe('big:10');
  });

  it('rejects malformed templates when compiled', () => {
    for (const template of ['stock:{x}', 'stock:{0', 'stock:0}', 'stock:{}', 'stock:{0..a}', 'stock:{-1}', '', '  ', 'a\nb', 'a\nb:{0}', 'x'.repeat(513), `${'x'.repeat(513)}{0}`, 'half:\uDC00']) {
      expect(() => compileKeyTemplate(template)).toThrow(InvalidLockKeyError);
    }
  });

  it('rejects values that would make a meaningless key', () => {
    const resolve = compileKeyTemplate('stock:{0.id}');
    expect(() => resolve([undefined])).toThrow(/resolved to undefined/);
    expect(() => resolve([{ id: null }])).toThrow(/resolved to null/);
    expect(() => resolve([{ id: { nested: 1 } }])).toThrow(/resolved to object/);
    expect(() => resolve([{ id: Number.NaN }])).toThrow(/resolved to NaN/);
    expect(() => compileKeyTemplate('{1}')(['only one'])).toThrow(/argument 1/);
  });

  it('accepts arrays of templates and key functions, and checks what functions return', () => {
    expect(toKeyResolver(['a:{0}', 'b:{1}'])(['x', 'y'])).toEqual(['a:x', 'b:y']);
    expect(toKeyResolver((a: string) => `f:${a}`)(['z'])).toBe('f:z');
    expect(() => toKeyResolver((() => 42) as unknown as () => string)([])).toThrow(InvalidLockKeyError);
    expect(() => toKeyResolver(42 as unknown as string)).toThrow(InvalidLockKeyError);
  });
});

import { InvalidLockKeyError } from '../errors/invalid-lock-key.error';
import { validateLockKey } from './lock-key';

/** Resolves a lock key (or several) from a method's arguments. */
export type KeyResolver<A extends readonly unknown[]> = (args: A) => string | readonly string[];

/** A key source: a fixed key, a template such as `'stock:{0}'` or `'order:{0.userId}'`, or a function of the arguments. */
export type LockKeySource<A extends readonly unknown[] = unknown[]> =
  | string
  | readonly string[]
  | ((...args: A) => string | readonly string[]);

const PLACEHOLDER = /\{([^{}]*)\}/g;
const PATH = /^(\d{1,2})((?:\.[A-Za-z_$][\w$]*)*)$/;

interface Segment {
  readonly literal?: string;
  readonly argument?: number;
  readonly path?: readonly string[];
  readonly source?: string;
}

/**
 * Compiles a key template once (at bootstrap) so that a malformed template fails before the first call.
 * `{N}` is the N-th argument; `{N.a.b}` a property path into it. Values must resolve to a string, a
 * finite number, a bigint or a boolean; `undefined`, `null` and objects are rejected at call time, since
 * a key such as "stock:undefined" would silently serialise unrelated calls or, worse, let them overlap.
 */
export function compileKeyTemplate<A extends readonly unknown[]>(template: string, where = 'key template'): KeyResolver<A> {
  const segments: Segment[] = [];
  let last = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    const index = match.index ?? 0;
    if (index > last) segments.push({ literal: template.slice(last, index) });
    const parsed = PATH.exec(match[1].trim());
    if (!parsed) {
      throw new InvalidLockKeyError(template, `${where}: placeholder "${match[0]}" is not of the form {N} or {N.property.path}`);
    }
    segments.push({ argument: Number(parsed[1]), path: parsed[2] ? parsed[2].slice(1).split('.') : [], source: match[0] });
    last = index + match[0].length;
  }
  if (last < template.length) segments.push({ literal: template.slice(last) });
  if (segments.some((segment) => segment.literal !== undefined && /[{}]/.test(segment.literal))) {
    throw new InvalidLockKeyError(template, `${where}: unbalanced "{" or "}"`);
  }
  // What is fixed in the template must already be a valid key part (no newline, no lone surrogate, not
  // too long), and a template without placeholders a valid key: such mistakes fail at bootstrap, not on
  // the first call.
  const literal = segments.map((segment) => segment.literal ?? '').join('');
  validateLockKey(literal, `${where} "${template.length > 40 ? `${template.slice(0, 40)}…` : template}"`, segments.some((segment) => segment.argument !== undefined));
  return (args) =>
    segments
      .map((segment) => (segment.literal !== undefined ? segment.literal : resolveSegment(template, where, segment, args)))
      .join('');
}

function resolveSegment(template: string, where: string, segment: Segment, args: readonly unknown[]): string {
  let value: unknown = args[segment.argument ?? 0];
  const trail = [String(segment.argument)];
  for (const property of segment.path ?? []) {
    if (value === null || value === undefined) break;
    value = (value as Record<string, unknown>)[property];
    trail.push(property);
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || typeof value === 'boolean') return String(value);
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  const what = value === null ? 'null' : typeof value === 'number' ? String(value) : typeof value;
  throw new InvalidLockKeyError(
    template,
    `${where}: ${segment.source} (argument ${trail.join('.')}) resolved to ${what}; it must be a string, a finite number, a bigint or a boolean`,
  );
}

/** Turns any key source into a resolver; templates are compiled now, functions are checked at call time. */
export function toKeyResolver<A extends readonly unknown[]>(source: LockKeySource<A>, where = 'key'): KeyResolver<A> {
  if (typeof source === 'string') return compileKeyTemplate<A>(source, where);
  if (Array.isArray(source)) {
    const compiled = (source as readonly string[]).map((item) => {
      if (typeof item !== 'string') throw new InvalidLockKeyError(String(item), `${where}: every key in the array must be a string template`);
      return compileKeyTemplate<A>(item, where);
    });
    return (args) => compiled.map((resolve) => resolve(args) as string);
  }
  if (typeof source === 'function') {
    const fn = source as (...args: A) => unknown;
    return (args) => {
      const keys = fn(...args);
      if (typeof keys === 'string') return keys;
      if (Array.isArray(keys) && keys.every((key) => typeof key === 'string')) return keys as string[];
      throw new InvalidLockKeyError(String(keys), `${where}: the key function must return a string or an array of strings`);
    };
  }
  throw new InvalidLockKeyError(String(source), `${where}: expected a template string, an array of templates, or a function of the arguments`);
}

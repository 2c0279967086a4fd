import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');
const LIB = join(ROOT, 'libs', 'distributed-lock');

interface PackedFile {
  path: string;
}

/** The library as a user receives it: built, packed, and loaded from its published entry points. */
describe('the packed library', () => {
  let files: string[];
  const manifest = JSON.parse(readFileSync(join(LIB, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { types: string; default: string }>;
    peerDependencies: Record<string, string>;
    peerDependenciesMeta: Record<string, { optional: boolean }>;
  };

  beforeAll(() => {
    execFileSync('npm', ['run', 'build:lib'], { cwd: ROOT, stdio: 'pipe' });
    const packed = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: LIB, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })) as Array<{ files: PackedFile[] }>;
    files = packed[0].files.map((file) => file.path);
  }, 120_000);

  it('ships compiled code and types for every export, and no tests', () => {
    for (const entry of ['.', './nest/health']) {
      const target = manifest.exports[entry] as { types: string; default: string };
      expect(files).toContain(target.types.replace('./', ''));
      expect(files).toContain(target.default.replace('./', ''));
    }
    expect(files.filter((file) => file.includes('.spec.'))).toEqual([]);
  });

  it('declares Nest as peers and every backend client as an optional peer', () => {
    for (const peer of ['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs']) {
      expect(manifest.peerDependencies[peer]).toBeDefined();
      expect(manifest.peerDependenciesMeta[peer]).toBeUndefined();
    }
    for (const client of ['ioredis', 'typeorm', 'mysql2', 'node-zookeeper-client', 'etcd3', 'memcache-client', '@nestjs/terminus', '@opentelemetry/api', '@nestjs/observe']) {
      expect(manifest.peerDependenciesMeta[client]).toEqual({ optional: true });
    }
  });

  it('names no optional peer in the declarations its main entry reaches (an app without it compiles with skipLibCheck: false)', () => {
    // Follow the relative imports of dist/index.d.ts; collect every package a reached declaration names.
    const optional = new Set(Object.keys(manifest.peerDependenciesMeta).filter((peer) => manifest.peerDependenciesMeta[peer].optional));
    const seen = new Set<string>();
    const named = new Map<string, string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/(?:from\s+|import\(\s*)['"]([^'"]+)['"]/g)) {
        const target = match[1];
        if (target.startsWith('.')) {
          const base = resolve(dirname(file), target);
          visit(existsSync(`${base}.d.ts`) ? `${base}.d.ts` : join(base, 'index.d.ts'));
        } else {
          const pkg = target.startsWith('@') ? target.split('/').slice(0, 2).join('/') : target.split('/')[0];
          if (!named.has(pkg)) named.set(pkg, file.replace(`${LIB}/`, ''));
        }
      }
    };
    visit(join(LIB, 'dist', 'index.d.ts'));
    expect(seen.size).toBeGreaterThan(20);
    expect([...named].filter(([pkg]) => optional.has(pkg))).toEqual([]);
  });

  it('loads its main entry without loading any backend client, nor OpenTelemetry or Observe while telemetry is off', () => {
    const script = `
      require('reflect-metadata');
      const lib = require(${JSON.stringify(join(LIB, 'dist', 'index.js'))});
      (async () => {
        const manager = new lib.LockManager(new lib.InMemoryLockStrategy());
        await new lib.LockService(manager).withLock('k', () => undefined);
        await manager.close();
        const loaded = Object.keys(require.cache).filter((p) => /node_modules\\/(ioredis|typeorm|mysql2|node-zookeeper-client|etcd3|memcache-client|@nestjs\\/terminus|@opentelemetry|@nestjs\\/observe)\\//.test(p));
        console.log(JSON.stringify({ exports: Object.keys(lib).sort(), loaded }));
      })();`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' })) as { exports: string[]; loaded: string[] };
    expect(out.loaded).toEqual([]);
    for (const name of ['DistributedLockModule', 'LockService', 'Locked', 'OptimisticVersion', 'InMemoryLockStrategy', 'DistributedLockError', 'currentLock', 'OpenTelemetryLockObserver', 'LOCK_TELEMETRY']) {
      expect(out.exports).toContain(name);
    }
    expect(existsSync(join(LIB, 'dist', 'index.d.ts'))).toBe(true);
  });
});

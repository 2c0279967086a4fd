// `npm run test:consumers`: the library as users receive it. Packs the tarball as `npm run pack:lib` does,
// resolves every row of the README's install table in a fresh Nest 11 and a fresh Nest 12 app
// (install-matrix.ts), installs it into each consumer app under test/consumers (copied outside the
// workspace) with no flags, fails on any peer or engine warning, builds the app, runs two instances of it
// against one Redis on Node 20, 22 and 24, runs the README's quick start over HTTP and the observability
// set-up where the fixture says so, and runs the app's own unit tests in its own runner. An app whose
// database is MariaDB or PostgreSQL, or that locks on ZooKeeper, gets the test server's (started here unless
// its LOCK_TEST_* variable names one). Options: --only <fixture>, --nodes 20,22, --no-matrix.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTopologies, stopStarted, type RunningTopology, type TopologyName } from '../services/index';
import { ALL_NODES, FIXTURES, type ConsumerFixture, type NodeMajor } from './fixtures';
import { observedRun, quickStartOverHttp } from './app-runs';
import { INSTALL_TROUBLE, installMatrix } from './install-matrix';
import { envFor, nodeBinary, type NodeBinary } from './node-binaries';
import { runTwoInstances } from './two-instances';

const ROOT = join(__dirname, '..', '..');
/** Rows of the install matrix resolved at once, per app (two apps, beside the fixtures' own installs). */
const MATRIX_PARALLEL = 2;

interface Outcome {
  readonly fixture: string;
  readonly node: string;
  readonly check: string;
  readonly ok: boolean;
  readonly detail: string;
}

const outcomes: Outcome[] = [];

function record(outcome: Outcome): void {
  outcomes.push(outcome);
  console.log(`${outcome.ok ? 'ok  ' : 'FAIL'} ${outcome.fixture} node ${outcome.node} ${outcome.check}: ${outcome.detail}`);
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): string {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status ?? result.signal}):\n${output.slice(-6_000)}`);
  return output;
}

/** The tarball, as `npm run pack:lib` makes it (its build's own small install, no workspace). */
function packLibrary(into: string): string {
  run(process.execPath, [join(ROOT, 'scripts', 'pack-lib.mjs'), '--pack-destination', into], ROOT, process.env);
  const tarball = readdirSync(into).find((file) => file.endsWith('.tgz'));
  if (!tarball) throw new Error('npm pack wrote no tarball');
  return join(into, tarball);
}

const REPORTED_PACKAGES = ['@nestjs/core', '@nestjs/typeorm', 'typescript', 'vitest', 'jest', 'ioredis', 'typeorm', 'better-sqlite3', 'mysql2', 'pg', 'node-zookeeper-client'];

/** The versions npm chose, so that the supported-versions table can name what was proven. */
function installedVersions(appDir: string): string {
  return REPORTED_PACKAGES.flatMap((name) => {
    const manifest = join(appDir, 'node_modules', name, 'package.json');
    return existsSync(manifest) ? [`${name} ${(JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version}`] : [];
  }).join(', ');
}

/** The test servers' addresses, by topology. */
type Servers = Partial<Record<TopologyName, string>>;

/** The servers a fixture's app is given: Redis always, its database server, ZooKeeper. */
function topologiesOf(fixture: ConsumerFixture): TopologyName[] {
  const database: TopologyName[] = fixture.database === 'mariadb' ? ['mariadb'] : fixture.database === 'postgres' ? ['postgres'] : [];
  return ['redis', ...database, ...(fixture.zookeeper ? (['zookeeper'] as const) : [])];
}

function serverOf(servers: Servers, topology: TopologyName, fixture: ConsumerFixture): string {
  const value = servers[topology];
  if (!value) throw new Error(`${fixture.name} needs ${topology}, but it was not started`);
  return value;
}

/** The app's environment for its servers: its database (MYSQL_URL, POSTGRES_URL, else a SQLite file of its own) and ZooKeeper. */
function serverEnv(fixture: ConsumerFixture, servers: Servers, sqliteFile: string): Record<string, string> {
  const env: Record<string, string> =
    fixture.database === 'mariadb'
      ? { MYSQL_URL: serverOf(servers, 'mariadb', fixture) }
      : fixture.database === 'postgres'
        ? { POSTGRES_URL: serverOf(servers, 'postgres', fixture) }
        : { SQLITE_FILE: sqliteFile };
  if (fixture.zookeeper) env.ZOOKEEPER_CONNECT = serverOf(servers, 'zookeeper', fixture);
  return env;
}

async function checkFixture(fixture: ConsumerFixture, tarball: string, nodes: Map<NodeMajor, NodeBinary>, servers: Servers, work: string): Promise<void> {
  const appDir = join(work, fixture.name);
  cpSync(join(ROOT, 'test', 'consumers', fixture.app ?? fixture.name), appDir, { recursive: true });
  const redisUrl = serverOf(servers, 'redis', fixture);
  const buildNode = nodes.get(fixture.buildNode) ?? nodeBinary(fixture.buildNode);
  const started = Date.now();
  const installLog = run('npm', ['install', tarball, ...fixture.packages], appDir, envFor(buildNode));
  const trouble = installLog.split('\n').filter((line) => INSTALL_TROUBLE.test(line));
  record({
    fixture: fixture.name,
    node: buildNode.version,
    check: `npm install <tarball> ${fixture.packages.join(' ')}`,
    ok: trouble.length === 0,
    detail: trouble.length ? trouble.join(' | ') : `no peer or engine warnings (${Math.round((Date.now() - started) / 1000)} s)`,
  });
  record({ fixture: fixture.name, node: buildNode.version, check: 'installed', ok: true, detail: installedVersions(appDir) });
  run('npm', ['run', 'build'], appDir, envFor(buildNode));
  record({ fixture: fixture.name, node: buildNode.version, check: 'npm run build', ok: true, detail: 'type-checked and compiled' });
  if (fixture.quickStart) {
    try {
      const result = await quickStartOverHttp({ appDir, node: buildNode, redisUrl });
      record({
        fixture: fixture.name,
        node: buildNode.version,
        check: "the README's quick start: 2 × npm run start:prod, 100 POST /counter/a each",
        ok: result.counted === result.expected,
        detail: `GET /counter/a answered ${result.counted} of ${result.expected} in ${result.ms} ms`,
      });
    } catch (error) {
      record({ fixture: fixture.name, node: buildNode.version, check: "the README's quick start over HTTP", ok: false, detail: String(error) });
    }
  }
  if (fixture.observability) {
    try {
      const result = await observedRun({ appDir, node: buildNode, redisUrl });
      record({
        fixture: fixture.name,
        node: buildNode.version,
        check: 'docs/observability.md set-up (src/telemetry.ts): a lock with telemetry: true',
        ok: result.lockSpan && result.acquisitions.some((line) => /lock_outcome="acquired"/.test(line)),
        detail: `lock span on the console: ${result.lockSpan ? 'yes' : 'no'}; Prometheus: ${result.acquisitions.join(' ; ') || 'no lock_acquisitions'}`,
      });
    } catch (error) {
      record({ fixture: fixture.name, node: buildNode.version, check: 'docs/observability.md set-up', ok: false, detail: String(error) });
    }
  }

  // The build node first: its native modules are already built for it.
  const order = [...nodes.values()]
    .filter((node) => !fixture.runNodes || fixture.runNodes.includes(node.major))
    .sort((a, b) => Number(b.major === fixture.buildNode) - Number(a.major === fixture.buildNode));
  let controlDone = false;
  for (const node of order) {
    if (node.major !== fixture.buildNode && fixture.nativeModules.length) run('npm', ['rebuild', ...fixture.nativeModules], appDir, envFor(node));
    const env: Record<string, string> = serverEnv(fixture, servers, join(appDir, `locks-${node.major}.sqlite`));
    for (const mode of fixture.scenarios) {
      try {
        const result = await runTwoInstances({ appDir, node, redisUrl, mode, env });
        const ok = result.counted === result.expected;
        record({ fixture: fixture.name, node: node.version, check: `2 instances × 100 @Locked increments (${mode})`, ok, detail: `counter ${result.counted} of ${result.expected} in ${result.ms} ms` });
      } catch (error) {
        record({ fixture: fixture.name, node: node.version, check: `2 instances (${mode})`, ok: false, detail: String(error) });
      }
    }
    if (!controlDone) {
      controlDone = true;
      const result = await runTwoInstances({ appDir, node, redisUrl, mode: 'off', env });
      record({
        fixture: fixture.name,
        node: node.version,
        check: 'control: the same increments unlocked',
        ok: result.counted < result.expected,
        detail: `counter ${result.counted} of ${result.expected} (updates lost, so the check can fail)`,
      });
    }
    if (fixture.unitNodes.includes(node.major)) {
      try {
        const output = run('npm', ['test'], appDir, envFor(node, { CI: '1' }));
        const summary = output
          .replace(/\x1b\[[0-9;]*m/g, '')
          .split('\n')
          .find((line) => /^\s*Tests:?\s/.test(line))
          ?.trim();
        record({ fixture: fixture.name, node: node.version, check: "the app's unit tests (npm test)", ok: true, detail: summary ?? 'passed' });
      } catch (error) {
        record({ fixture: fixture.name, node: node.version, check: "the app's unit tests (npm test)", ok: false, detail: String(error) });
      }
    }
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
  const majors = args.includes('--nodes') ? (args[args.indexOf('--nodes') + 1].split(',').map(Number) as NodeMajor[]) : ALL_NODES;
  const matrix = !args.includes('--no-matrix');
  const fixtures = FIXTURES.filter((fixture) => !only || fixture.name === only);
  if (fixtures.length === 0) throw new Error(`no consumer fixture named ${only}`);

  const started = Date.now();
  const work = mkdtempSync(join(tmpdir(), 'lock-consumers-'));
  let running: RunningTopology[] = [];
  try {
    // A fresh machine has no server packages yet: this runs before `npm test`, whose setup would install them.
    running = await startTopologies([...new Set(fixtures.flatMap(topologiesOf))], (line) => process.stdout.write(`${line}\n`));
    const servers: Servers = Object.fromEntries(running.map((topology) => [topology.name, topology.value]));
    const tarball = packLibrary(work);
    const nodes = new Map(majors.map((major) => [major, nodeBinary(major)] as const));
    // Every row of the README's install table, in a fresh app of each Nest major, on its build's Node. Only
    // npm's resolution, mostly waiting on the registry: it runs beside the apps' own installs and runs.
    const matrices = Promise.all(
      fixtures
        .filter((candidate) => matrix && candidate.installMatrix)
        .map((fixture) =>
          installMatrix({
            app: fixture.name,
            appDir: join(ROOT, 'test', 'consumers', fixture.app ?? fixture.name),
            tarball,
            node: nodes.get(fixture.buildNode) ?? nodeBinary(fixture.buildNode),
            work,
            parallel: MATRIX_PARALLEL,
            report: (outcome) => record({ fixture: `${outcome.app} (fresh)`, node: outcome.node, check: outcome.install, ok: outcome.ok, detail: outcome.detail }),
          }).catch((error: unknown) => {
            record({ fixture: `${fixture.name} (fresh)`, node: '-', check: 'install matrix', ok: false, detail: String(error) });
          }),
        ),
    );
    for (const fixture of fixtures) {
      try {
        await checkFixture(fixture, tarball, nodes, servers, work);
      } catch (error) {
        record({ fixture: fixture.name, node: '-', check: 'setup', ok: false, detail: String(error) });
      }
    }
    await matrices;
  } finally {
    await stopStarted(running);
    rmSync(work, { recursive: true, force: true });
  }
  const failed = outcomes.filter((outcome) => !outcome.ok).length;
  console.log(`\nconsumer apps: ${outcomes.length - failed} passed, ${failed} failed (${Math.round((Date.now() - started) / 1000)} s)`);
  process.exit(failed ? 1 : 0);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

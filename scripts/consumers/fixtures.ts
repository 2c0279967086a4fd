// The consumer apps under test/consumers: generated once by `nest new`, then given a @Locked counter.
// What each installs, and on which Node majors each check runs.

export type NodeMajor = 20 | 22 | 24;

export interface ConsumerFixture {
  /** Folder under test/consumers. */
  readonly name: string;
  /** Packages installed beside the library's tarball, as a user would name them. */
  readonly packages: readonly string[];
  /** Node whose npm installs and whose toolchain builds the app (Nest CLI 12 wants Node ≥ 22.12). */
  readonly buildNode: NodeMajor;
  /** Lock modes of the two-process scenario: the app's LOCKS variable. */
  readonly scenarios: readonly string[];
  /** Node majors the app's own unit tests run on. */
  readonly unitNodes: readonly NodeMajor[];
  /** Native modules to rebuild for each Node major (their ABI differs). */
  readonly nativeModules: readonly string[];
}

export const ALL_NODES: readonly NodeMajor[] = [20, 22, 24];

export const FIXTURES: readonly ConsumerFixture[] = [
  { name: 'nest12-esm', packages: ['ioredis'], buildNode: 22, scenarios: ['redis'], unitNodes: ALL_NODES, nativeModules: [] },
  {
    name: 'nest12-cjs',
    // The older lines of the optional peers (the repository's own tests run the newest): an existing app
    // on TypeORM 0.3, whose optional peer on ioredis is ^5.
    packages: ['ioredis@5', '@nestjs/typeorm', 'typeorm@0.3', 'better-sqlite3@11'],
    buildNode: 22,
    scenarios: ['redis', 'row'],
    // Jest loads Nest 12 (ESM only) through require(esm), which it supports from Node 24.9: on 20 and 22 the
    // app's generated test fails the same way before our library is installed.
    unitNodes: [24],
    nativeModules: ['better-sqlite3'],
  },
  { name: 'nest11-cjs', packages: ['ioredis'], buildNode: 20, scenarios: ['redis'], unitNodes: ALL_NODES, nativeModules: [] },
];

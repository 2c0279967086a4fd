// Every TypeScript block of the README and docs/ compiles against the library as it is now, read from the
// Markdown files themselves (code-blocks.ts): a block whose API drifted (an option renamed, a type changed)
// fails here. Blocks copied from a consumer app (`<!-- from … -->`) are compiled where they live, by
// `npm run test:consumers`; readme-snippets.spec.ts checks that they are that file. Shell blocks are
// checked with `bash -n`.
//
// Docs show fragments (a decorated method, two lines in a service): a fragment compiles with what an
// application around it has. Each block is a module of its own that imports, from the library and from the
// packages Nest applications use, every name it does not declare or import itself, and the names of the
// application around the examples (`locks`, `dataSource`, `Product`, …) from your-app.ts. What a block
// imports itself is checked as written.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import ts from 'typescript';
import { allCodeBlocks, ROOT, type CodeBlock } from './code-blocks';

const LIBRARY = join(ROOT, 'libs', 'distributed-lock', 'src');

/** The library's entry points, as an application imports them, and their source. */
const LIBRARY_ENTRIES: Readonly<Record<string, string>> = {
  'nest-distributed-lock': 'index.ts',
  'nest-distributed-lock/strategies/redis': 'strategies/redis/index.ts',
  'nest-distributed-lock/strategies/database': 'strategies/database/index.ts',
  'nest-distributed-lock/strategies/zookeeper': 'strategies/zookeeper/index.ts',
  'nest-distributed-lock/strategies/etcd': 'strategies/etcd/index.ts',
  'nest-distributed-lock/strategies/memcached': 'strategies/memcached/index.ts',
  'nest-distributed-lock/nest/health': 'nest/health/index.ts',
  'nest-distributed-lock/strategy-kit': 'strategy-kit/index.ts',
};

/** What a Nest application around a fragment has imported from other packages. */
const PACKAGES: Readonly<Record<string, readonly string[]>> = {
  '@nestjs/common': ['Module', 'Injectable', 'Inject', 'Controller', 'Get', 'Post', 'Param', 'Catch', 'HttpStatus', 'ExceptionFilter', 'ArgumentsHost', 'OnModuleInit'],
  '@nestjs/schedule': ['Cron', 'CronExpression', 'Interval', 'Timeout', 'ScheduleModule'],
  '@nestjs/config': ['ConfigModule', 'ConfigService'],
  '@nestjs/terminus': ['HealthCheck', 'HealthCheckService', 'TerminusModule'],
  '@nestjs/typeorm': ['getDataSourceToken', 'TypeOrmModule', 'InjectRepository'],
  '@nestjs/testing': ['Test', 'TestingModule'],
  typeorm: ['DataSource', 'QueryRunner', 'EntityManager', 'Repository'],
  ioredis: ['Redis', 'Cluster'],
  etcd3: ['Etcd3'],
  'node:fs': ['readFileSync'],
  express: ['Response'],
};

/** The application around the examples. */
const YOUR_APP = join(__dirname, 'your-app.ts');

/** The names each library entry exports (a quick program over the library's own files). */
function libraryExports(): Map<string, string[]> {
  const files = ts.sys.readDirectory(LIBRARY, ['.ts'], ['**/*.spec.ts']);
  const program = ts.createProgram(files, { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, noResolve: true, noLib: true, types: [], noEmit: true });
  const checker = program.getTypeChecker();
  const exported = new Map<string, string[]>();
  for (const [specifier, file] of Object.entries(LIBRARY_ENTRIES)) {
    const source = program.getSourceFile(join(LIBRARY, file));
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`${file} is not a module of the library`);
    exported.set(specifier, checker.getExportsOfModule(module).map((symbol) => symbol.name));
  }
  return exported;
}

/** Names a block declares or imports at its top level: the imports added before it must not repeat them. */
function ownNames(code: string): Set<string> {
  const source = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022, false, ts.ScriptKind.TS);
  const names = new Set<string>();
  const addBinding = (name: ts.BindingName): void => {
    if (ts.isIdentifier(name)) names.add(name.text);
    else for (const element of name.elements) if (!ts.isOmittedExpression(element)) addBinding(element.name);
  };
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      if (clause?.name) names.add(clause.name.text);
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamedImports(bindings)) for (const element of bindings.elements) names.add(element.name.text);
      if (bindings && ts.isNamespaceImport(bindings)) names.add(bindings.name.text);
    } else if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) addBinding(declaration.name);
    } else if ((ts.isClassDeclaration(statement) || ts.isFunctionDeclaration(statement) || ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement) || ts.isEnumDeclaration(statement)) && statement.name) {
      names.add(statement.name.text);
    }
  }
  return names;
}

/** One compiled file: a block, or several naming the same `file:`. */
interface SnippetFile {
  readonly path: string;
  readonly blocks: CodeBlock[];
}

/** The TypeScript blocks, grouped into the files they make (a page's blocks that name one file make it together). */
function snippetFiles(blocks: readonly CodeBlock[]): SnippetFile[] {
  const files = new Map<string, SnippetFile>();
  for (const block of blocks) {
    if (block.language !== 'ts' && block.language !== 'typescript') continue;
    if (block.from) continue;
    // Virtual paths, never written: under the repository so that packages resolve from its node_modules.
    const page = block.doc.replace(/\.md$/, '').replace(/[^a-zA-Z0-9/]+/g, '-');
    const path = join(ROOT, '.docs-code', page, block.file ?? `line-${block.line}.ts`);
    const file = files.get(path);
    if (file) file.blocks.push(block);
    else files.set(path, { path, blocks: [block] });
  }
  return [...files.values()];
}

interface Compiled {
  readonly text: string;
  /** Per line of `text`: the Markdown line it shows, or undefined for the imports added before it. */
  readonly origins: ReadonlyArray<{ doc: string; line: number } | undefined>;
}

function compose(file: SnippetFile, imports: ReadonlyMap<string, readonly string[]>): Compiled {
  const code = file.blocks.map((block) => block.code).join('\n');
  const own = ownNames(code);
  const taken = new Set(own);
  const header: string[] = [];
  for (const [specifier, names] of imports) {
    const wanted = names.filter((name) => !taken.has(name));
    for (const name of wanted) taken.add(name);
    if (wanted.length) header.push(`import { ${wanted.join(', ')} } from '${specifier}';`);
  }
  const origins: Array<{ doc: string; line: number } | undefined> = header.map(() => undefined);
  for (const block of file.blocks) block.code.split('\n').forEach((_, i) => origins.push({ doc: block.doc, line: block.line + i }));
  return { text: [...header, code, 'export {};', ''].join('\n'), origins };
}

function compileBlocks(files: readonly SnippetFile[]): string[] {
  const library = libraryExports();
  const yourApp = ts.createSourceFile(YOUR_APP, ts.sys.readFile(YOUR_APP) ?? '', ts.ScriptTarget.ES2022);
  const yourAppNames = yourApp.statements.flatMap((statement) => {
    const modifiers = ts.canHaveModifiers(statement) ? ts.getModifiers(statement) : undefined;
    if (!modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)) return [];
    if (ts.isVariableStatement(statement)) return statement.declarationList.declarations.map((d) => (ts.isIdentifier(d.name) ? d.name.text : ''));
    const named = statement as ts.Statement & { name?: ts.Identifier };
    return named.name ? [named.name.text] : [];
  });
  const imports = new Map<string, readonly string[]>([...library, ...Object.entries(PACKAGES), ['@docs/your-app', yourAppNames.filter(Boolean)]]);

  const composed = new Map(files.map((file) => [file.path, compose(file, imports)] as const));
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts', 'lib.esnext.disposable.d.ts'],
    types: ['node', 'vitest/globals'],
    typeRoots: [join(ROOT, 'node_modules', '@types'), join(ROOT, 'node_modules')],
    strict: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    skipLibCheck: true,
    noEmit: true,
    paths: {
      'nest-distributed-lock': [join(LIBRARY, 'index.ts')],
      'nest-distributed-lock/*': [join(LIBRARY, '*', 'index.ts'), join(LIBRARY, '*')],
      '@docs/your-app': [YOUR_APP],
    },
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.readFile = (path) => composed.get(path)?.text ?? readFile(path);
  host.fileExists = (path) => composed.has(path) || fileExists(path);
  const directoryExists = host.directoryExists?.bind(host);
  const virtualDirectories = new Set([...composed.keys()].flatMap((path) => path.split('/').map((_, i, parts) => parts.slice(0, i).join('/'))));
  host.directoryExists = (path) => virtualDirectories.has(path) || (directoryExists?.(path) ?? ts.sys.directoryExists(path));
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (path, language, onError, create) => {
    const text = composed.get(path)?.text;
    return text === undefined ? getSourceFile(path, language, onError, create) : ts.createSourceFile(path, text, language);
  };
  const program = ts.createProgram([...composed.keys()], options, host);
  const problems: string[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const file = diagnostic.file;
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const compiled = file && composed.get(file.fileName);
    if (!file || !compiled) {
      problems.push(`${file?.fileName ?? '(no file)'}: ${message}`);
      continue;
    }
    const { line } = file.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    const origin = compiled.origins[line];
    problems.push(`${origin ? `${origin.doc}:${origin.line}` : `${file.fileName} (added imports)`}: TS${diagnostic.code} ${message}`);
  }
  return problems;
}

describe('code blocks of the README and docs/', () => {
  const blocks = allCodeBlocks();

  it('every TypeScript block compiles against the library', () => {
    const files = snippetFiles(blocks);
    expect(files.length).toBeGreaterThan(40);
    expect(compileBlocks(files)).toEqual([]);
  }, 120_000);

  it('every shell block is valid bash', () => {
    const shell = blocks.filter((block) => block.language === 'bash' || block.language === 'sh');
    expect(shell.length).toBeGreaterThan(3);
    const problems = shell.flatMap((block) => {
      const result = spawnSync('bash', ['-n'], { input: block.code, encoding: 'utf8' });
      return result.status === 0 ? [] : [`${block.doc}:${block.line}: ${result.stderr.trim()}`];
    });
    expect(problems).toEqual([]);
  });

  it('every block has a language the checks know, or is left out on purpose (SQL, ini, text: no compiler here)', () => {
    const languages = new Set(blocks.map((block) => block.language));
    expect([...languages].filter((language) => !['ts', 'typescript', 'bash', 'sh', 'sql', 'ini', 'text'].includes(language))).toEqual([]);
  });
});

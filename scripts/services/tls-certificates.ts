import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Files of a throwaway certificate authority and of a server certificate it signed for 127.0.0.1. */
export interface TlsFiles {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/** Where `makeTlsFiles(dir)` writes, so that clients can find the CA from the instance directory alone. */
export function tlsFilesIn(dir: string): TlsFiles {
  const tls = join(dir, 'tls');
  return { ca: join(tls, 'ca.crt'), cert: join(tls, 'server.crt'), key: join(tls, 'server.key') };
}

function openssl(args: readonly string[], cwd: string): void {
  const result = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`openssl ${args[0]} failed: ${result.stderr || result.error?.message}`);
}

/**
 * Makes a throwaway CA and a server certificate for IP 127.0.0.1 (in subjectAltName, which clients check)
 * under `dir`/tls with `openssl` (Debian's openssl package: the TLS topologies list it among their packages).
 * EC P-256 keys, made in milliseconds. Valid for two days: a run never outlives them, nothing trusts them after.
 */
export function makeTlsFiles(dir: string): TlsFiles {
  const files = tlsFilesIn(dir);
  const tls = join(dir, 'tls');
  mkdirSync(tls, { recursive: true });
  writeFileSync(join(tls, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n');
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(['req', '-x509', ...newKey, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=lock-test throwaway CA'], tls);
  openssl(['req', ...newKey, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1'], tls);
  openssl(['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext'], tls);
  return files;
}

import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// Starts the real Engine the way a new user's `make run` does: a fresh data
// directory, so it initialises its own private PostgreSQL cluster and the
// embedded Temporal server. Global setup starts one for the main walk; a
// spec that needs a deployment of its own (another public URL, say) starts
// another with startEngine.
//
// Environment:
//   CAIRN_E2E_ENGINE_BIN      Engine binary (default ../bin/cairn, relative to web/)
//   CAIRN_E2E_DATABASE_URL    use this PostgreSQL instead of a private cluster
//   CAIRN_E2E_READY_TIMEOUT_MS how long to wait for GET /ready (default 120000)
//   CAIRN_E2E_KEEP_DATA=1     keep the temporary data directory for inspection
//   CAIRN_LOG_LEVEL           passed on (default info); the Engine log goes to e2e/artifacts/<name>.log

const webDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const artifactsDir = join(webDir, 'e2e', 'artifacts');

// Ports come from below Linux's ephemeral range (32768 and up): the Engine's
// private PostgreSQL asks the kernel for an ephemeral port after this picks
// its ports and lets them go, and could otherwise be handed one of them.
const PORT_LOW = 20000;
const PORT_HIGH = 32000;

function tryPort(port: number): Promise<boolean> {
  return new Promise((resolvePort) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolvePort(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolvePort(true)));
  });
}

async function freePort(): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = PORT_LOW + Math.floor(Math.random() * (PORT_HIGH - PORT_LOW));
    if (await tryPort(port)) return port;
  }
  throw new Error(`no free port between ${PORT_LOW} and ${PORT_HIGH}`);
}

async function distinctFreePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

function tail(file: string, lines = 40): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function waitForReady(baseURL: string, child: ChildProcess, timeoutMs: number, logFile: string) {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `Engine exited (code ${child.exitCode}, signal ${child.signalCode}) before /ready answered 200.\n` +
          `Last lines of ${logFile}:\n${tail(logFile)}`,
      );
    }
    try {
      const res = await fetch(`${baseURL}/ready`, { signal: AbortSignal.timeout(5000) });
      if (res.status === 200) return;
      last = `${res.status} ${await res.text()}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`Engine not ready after ${timeoutMs} ms (last: ${last}).\nLast lines of ${logFile}:\n${tail(logFile)}`);
}

function exited(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((res) => {
    const timer = setTimeout(() => res(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      res(true);
    });
  });
}

export interface EngineOptions {
  /** Log file name under e2e/artifacts, without extension. */
  name: string;
  /**
   * Host name in the public URL and the returned base URL (default
   * 127.0.0.1). Passkeys need a name: browsers refuse IP relying parties.
   */
  publicHost?: string;
  /**
   * Listen on these ports instead of free ones: a fresh Engine that takes
   * over another's address (a restore onto a new deployment, whose agents
   * know only that address). The other Engine must be stopped first.
   */
  ports?: EnginePorts;
  /**
   * The HTTPS listener's host (default 127.0.0.1): 0.0.0.0 for agents in
   * another network namespace, which reach it over a veth pair.
   */
  httpsHost?: string;
  /** Extra environment for `cairn serve` (CAIRN_WIREGUARD_*, SERVICE_VNC_*). */
  env?: Record<string, string>;
}

export interface EnginePorts {
  http: number;
  https: number;
  temporal: number;
}

export interface Engine {
  baseURL: string;
  /**
   * The first-run setup code `cairn serve` wrote to its data directory
   * (the wizard asks for it; it is gone once setup finishes).
   */
  setupCode: () => Promise<string>;
  /** Where the setup code is, for specs in other workers. */
  setupCodeFile: string;
  /** The ports it listens on (for a successor at the same address). */
  ports: EnginePorts;
  /** SIGTERM, wait (then kill its process group), remove the data directory. */
  stop: () => Promise<void>;
  /**
   * Restarts `cairn serve` on the same data directory and ports (what an
   * operator does when an answer says restart_required); resolves once
   * /ready answers again.
   */
  restart: () => Promise<void>;
}

export async function startEngine(opts: EngineOptions): Promise<Engine> {
  mkdirSync(artifactsDir, { recursive: true });
  const bin = resolve(webDir, process.env.CAIRN_E2E_ENGINE_BIN ?? '../bin/cairn');
  if (!existsSync(bin)) {
    throw new Error(`Engine binary not found at ${bin}. Build it first: (cd .. && go build -o bin/cairn ./cmd/cairn)`);
  }

  const dataDir = await mkdtemp(join(tmpdir(), 'cairn-e2e-'));
  // mkdtemp makes the directory private (0700). When the Engine runs as root
  // it runs PostgreSQL as the postgres user, which must be able to traverse
  // the data directory; otherwise the Engine puts the cluster in a fallback
  // directory outside it, which this teardown would not remove.
  await chmod(dataDir, 0o755);
  const [httpPort, temporalPort, httpsPort] = opts.ports
    ? [opts.ports.http, opts.ports.temporal, opts.ports.https]
    : await distinctFreePorts(3);
  const baseURL = `http://${opts.publicHost ?? '127.0.0.1'}:${httpPort}`;
  // Readiness is checked on the listen address itself, whatever the name.
  const probeURL = `http://127.0.0.1:${httpPort}`;

  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL;
  delete env.TEMPORAL_ADDRESS;
  delete env.CAIRN_PUBLIC_URL;
  if (process.env.CAIRN_E2E_DATABASE_URL) env.DATABASE_URL = process.env.CAIRN_E2E_DATABASE_URL;
  if (opts.publicHost) env.CAIRN_PUBLIC_URL = baseURL;
  env.CAIRN_DATA_DIR = dataDir;
  env.CAIRN_HTTP_ADDR = `127.0.0.1:${httpPort}`;
  // A free port: several Engines may run at once, so not the default 8443.
  env.CAIRN_HTTPS_ADDR = `${opts.httpsHost ?? '127.0.0.1'}:${httpsPort}`;
  env.CAIRN_TEMPORAL_PORT = String(temporalPort);
  env.CAIRN_TEMPORAL_UI_PORT = '0';
  env.CAIRN_LOG_LEVEL = process.env.CAIRN_LOG_LEVEL ?? 'info';
  Object.assign(env, opts.env);

  const logFile = join(artifactsDir, `${opts.name}.log`);
  const log = createWriteStream(logFile);
  let child: ChildProcess;
  const launch = () => {
    // Its own process group, so a teardown that must force it can reach the
    // helpers it started (PostgreSQL, Temporal) without touching anything else.
    child = spawn(bin, ['serve'], { env, cwd: dataDir, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    console.log(`[e2e] started ${bin} serve (pid ${child.pid}) on ${baseURL}, data ${dataDir}, log ${logFile}`);
  };
  const ready = async () => {
    const started = Date.now();
    await waitForReady(probeURL, child, Number(process.env.CAIRN_E2E_READY_TIMEOUT_MS ?? 120_000), logFile);
    console.log(`[e2e] Engine ready after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  };
  const halt = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      child.kill('SIGTERM');
      if (!(await exited(child, 30_000))) {
        console.warn(`[e2e] Engine pid ${child.pid} ignored SIGTERM for 30 s; killing its process group`);
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
        await exited(child, 5_000);
      }
    }
  };

  const stop = async () => {
    await halt();
    log.end();
    if (process.env.CAIRN_E2E_KEEP_DATA === '1') {
      console.log(`[e2e] kept data directory ${dataDir}`);
    } else {
      await rm(dataDir, { recursive: true, force: true, maxRetries: 3 });
    }
  };
  const restart = async () => {
    await halt();
    launch();
    await ready();
  };

  launch();
  try {
    await ready();
  } catch (err) {
    await stop();
    throw err;
  }
  const setupCodeFile = join(dataDir, 'setup-code');
  return {
    baseURL,
    stop,
    restart,
    ports: { http: httpPort, https: httpsPort, temporal: temporalPort },
    setupCodeFile,
    setupCode: () => readSetupCode(setupCodeFile),
  };
}

/** Reads a setup code file that `cairn serve` wrote. */
export async function readSetupCode(file: string): Promise<string> {
  return (await readFile(file, 'utf8')).trim();
}

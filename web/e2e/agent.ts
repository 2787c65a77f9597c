import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { artifactsDir } from './engine';

// Runs the real cairn-agent binary against an Engine: `enroll` (which waits
// for an operator's approval), then `run`. Its config lives in a temporary
// directory; the log goes to e2e/artifacts/<name>.log.
//
// Environment:
//   CAIRN_E2E_AGENT_BIN   agent binary (default ../bin/cairn-agent, relative to web/)

const webDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface Agent {
  /** Resolves when `enroll` exits 0 (after approval); rejects otherwise. */
  enrolled: Promise<void>;
  /** Starts `cairn-agent run` (after enrolled). */
  run: () => void;
  stop: () => Promise<void>;
  /** Runs one cairn-agent command against this agent's config (e.g. `--metadata get 30`); resolves with its output. */
  cli: (args: string[]) => Promise<{ code: number | null; output: string }>;
}

export async function startAgent(opts: {
  name: string;
  server: string;
  code: string;
  hostname: string;
  /** Extra environment for the agent (e.g. CAIRN_AGENT_INIT_DIR). */
  env?: Record<string, string>;
  /**
   * A command the agent runs under (e.g. `ip netns exec <ns>`: an agent in
   * its own network namespace, netns.ts).
   */
  wrap?: string[];
  /** Extra arguments for `enroll` (e.g. --ca-file, --server-ip-fallback). */
  enrollArgs?: string[];
}): Promise<Agent> {
  const bin = resolve(webDir, process.env.CAIRN_E2E_AGENT_BIN ?? '../bin/cairn-agent');
  if (!existsSync(bin)) {
    throw new Error(`Agent binary not found at ${bin}. Build it first: (cd .. && go build -o bin/cairn-agent ./cmd/cairn-agent)`);
  }
  mkdirSync(artifactsDir, { recursive: true });
  const dir = await mkdtemp(join(tmpdir(), 'cairn-e2e-agent-'));
  const config = join(dir, 'agent.json');
  const log = createWriteStream(join(artifactsDir, `${opts.name}.log`));
  const children: ChildProcess[] = [];
  const start = (args: string[]) => {
    const argv = [bin, ...args, '--config', config, '--hostname', opts.hostname];
    const wrap = opts.wrap ?? [];
    const child = spawn(wrap[0] ?? bin, wrap.length ? [...wrap.slice(1), ...argv] : argv.slice(1), {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...opts.env },
    });
    child.stdout?.pipe(log, { end: false });
    child.stderr?.pipe(log, { end: false });
    children.push(child);
    return child;
  };
  const enroll = start(['enroll', '--server', opts.server, '--code', opts.code, ...(opts.enrollArgs ?? [])]);
  const enrolled = new Promise<void>((res, rej) => {
    enroll.once('exit', (code) => (code === 0 ? res() : rej(new Error(`cairn-agent enroll exited ${code}; see ${opts.name}.log`))));
  });
  return {
    enrolled,
    run: () => void start(['run']),
    cli: (args) =>
      new Promise((res, rej) => {
        const child = spawn(bin, ['--config', config, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } });
        let output = '';
        child.stdout?.on('data', (b) => (output += String(b)));
        child.stderr?.on('data', (b) => (output += String(b)));
        child.once('error', rej);
        child.once('exit', (code) => res({ code, output }));
      }),
    stop: async () => {
      for (const c of children) {
        if (c.exitCode === null && c.signalCode === null) {
          c.kill('SIGTERM');
          await new Promise((r) => {
            const timer = setTimeout(() => {
              c.kill('SIGKILL');
              r(undefined);
            }, 10_000);
            c.once('exit', () => {
              clearTimeout(timer);
              r(undefined);
            });
          });
        }
      }
      log.end();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

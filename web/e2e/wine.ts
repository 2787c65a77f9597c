import { type APIRequestContext, expect } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { artifactsDir } from './engine';
import { approveWhenPending, siteEnrollmentCode, waitConnected } from './fleet';

// The Windows build of cairn-agent under Wine, for specs that need a real
// Windows agent against a real Engine (windows-agent, registry-wine).
//
// Environment:
//   CAIRN_E2E_WINEPREFIX           a prepared Wine prefix (make test-wine's:
//                                  booted, ProcessPrng shim in system32)
//   CAIRN_E2E_WINDOWS_AGENT_BIN    the Windows agent (default
//                                  ../bin/agents/windows-amd64/cairn-agent.exe)
//   CAIRN_E2E_WINE                 the Wine loader (default /usr/lib/wine/wine64)

const webDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface WineAgent {
  /** Kills the agent's processes and removes its config directory from the prefix. */
  stop(): void;
}

/**
 * Creates a site, enrolls the Windows agent under Wine into it (config at
 * C:\<name>-<time>\agent.json in the prefix), approves it, runs it and
 * waits until its realtime socket is up. Logs go to artifacts/<name>-*.log.
 */
export async function enrollConnectedUnderWine(
  api: APIRequestContext,
  base: string,
  auth: Record<string, string>,
  opts: { name: string; hostname: string; slug: string },
): Promise<WineAgent> {
  const prefix = process.env.CAIRN_E2E_WINEPREFIX;
  if (!prefix || !existsSync(join(prefix, 'drive_c', 'windows', 'system32', 'bcryptprimitives.dll'))) {
    throw new Error(`CAIRN_E2E_WINEPREFIX (${prefix ?? 'unset'}) must name a Wine prefix with the ProcessPrng shim (make test-wine prepares one)`);
  }
  const exe = resolve(webDir, process.env.CAIRN_E2E_WINDOWS_AGENT_BIN ?? '../bin/agents/windows-amd64/cairn-agent.exe');
  if (!existsSync(exe)) throw new Error(`Windows agent not found at ${exe}; build it with make agents`);
  const configDir = `${opts.name}-${Date.now()}`;
  const config = `C:\\${configDir}\\agent.json`;
  const children: ChildProcess[] = [];
  const agent: WineAgent = {
    stop() {
      for (const c of children) {
        if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      }
      rmSync(join(prefix, 'drive_c', configDir), { recursive: true, force: true });
    },
  };
  const run = (args: string[]) => {
    mkdirSync(artifactsDir, { recursive: true });
    const log = createWriteStream(join(artifactsDir, `${opts.name}-${args[0]}.log`));
    const child = spawn(process.env.CAIRN_E2E_WINE ?? '/usr/lib/wine/wine64', [exe, ...args, '--config', config, '--hostname', opts.hostname], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, WINEPREFIX: prefix, WINEDEBUG: '-all' },
    });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    children.push(child);
    return child;
  };

  const code = await siteEnrollmentCode(api, base, auth, opts.slug);
  const enroll = run(['enroll', '--server', base, '--code', code]);
  const enrolled = new Promise<number | null>((r) => enroll.once('exit', r));
  await approveWhenPending(api, base, auth, opts.hostname);
  expect(await enrolled).toBe(0);
  run(['run']);
  try {
    await waitConnected(api, base, opts.hostname);
  } catch (e) {
    // CI shows only the test's output, not artifacts/: say how far the
    // agent got (its first line is logged before anything that can wait).
    const log = join(artifactsDir, `${opts.name}-run.log`);
    const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
    throw new Error(`${(e as Error).message}\nthe agent's run log under Wine (${text.length} bytes):\n${text.slice(-4000) || '(empty: the process never got as far as its first log line)'}`);
  }
  return agent;
}

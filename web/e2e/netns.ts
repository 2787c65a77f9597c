import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';

// A network namespace joined to this one by a veth pair, made and removed
// by the spec itself (as cmd/cairn's newNetns does for the Go end-to-end
// tests): an agent started inside reaches the Engine only over the veth,
// and the Engine reaches the agent's services only through the WireGuard
// tunnel. Needs root, `ip` (iproute2), and for the tunnel `wg`, `wg-quick`
// and `wireguard-go` (scripts/deps.sh test).

export interface Netns {
  name: string;
  /** The host's end of the veth (the agent's --server-ip-fallback and the Engine's CAIRN_WIREGUARD_FALLBACK_IP). */
  hostIP: string;
  /** The namespace's end. */
  nsIP: string;
  /** The WireGuard interface name the agent in it should use (CAIRN_AGENT_WG_INTERFACE). */
  wgIface: string;
  /** argv prefix that runs a command inside the namespace. */
  exec: string[];
  /** Starts a long-lived process inside the namespace; remove() kills it. */
  spawn: (cmd: string, args: string[], opts?: { env?: Record<string, string>; fds?: number }) => ChildProcess;
  /** Kills what runs inside, deletes the interfaces and the namespace. */
  remove: () => void;
}

function ip(...args: string[]) {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

export function makeNetns(): Netns {
  if (process.getuid?.() !== 0) {
    throw new Error('this spec makes a network namespace (ip netns) and needs root');
  }
  const id = randomBytes(3).toString('hex');
  const octet = randomBytes(1)[0];
  const name = `cairn-e2e-${id}`;
  const hostIf = `ceh${id}`;
  const nsIf = `cea${id}`;
  const n = {
    name,
    hostIP: `10.234.${octet}.1`,
    nsIP: `10.234.${octet}.2`,
    wgIface: `cew${id}`,
    exec: ['ip', 'netns', 'exec', name],
  };
  const children: ChildProcess[] = [];
  const remove = () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    }
    try {
      execFileSync('ip', ['-n', name, 'link', 'del', n.wgIface], { stdio: 'ignore' });
    } catch {
      // Not there (the agent never brought it up, or took it down).
    }
    try {
      const pids = execFileSync('ip', ['netns', 'pids', name], { encoding: 'utf8' }).split(/\s+/).filter(Boolean);
      for (const pid of pids) {
        if (Number(pid) !== process.pid) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // Gone already.
          }
        }
      }
    } catch {
      // No namespace.
    }
    for (const args of [['link', 'del', hostIf], ['netns', 'del', name]]) {
      try {
        execFileSync('ip', args, { stdio: 'ignore' });
      } catch {
        // Gone already.
      }
    }
  };
  try {
    ip('netns', 'add', name);
    ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf);
    ip('link', 'set', nsIf, 'netns', name);
    ip('addr', 'add', `${n.hostIP}/30`, 'dev', hostIf);
    ip('link', 'set', hostIf, 'up');
    ip('-n', name, 'addr', 'add', `${n.nsIP}/30`, 'dev', nsIf);
    ip('-n', name, 'link', 'set', nsIf, 'up');
    ip('-n', name, 'link', 'set', 'lo', 'up');
  } catch (err) {
    remove();
    throw err;
  }
  return {
    ...n,
    spawn: (cmd, args, opts) => {
      const stdio: ('ignore' | 'pipe')[] = ['ignore', 'pipe', 'pipe'];
      for (let i = 3; i < 3 + (opts?.fds ?? 0); i++) stdio.push('pipe');
      const child = spawn('ip', ['netns', 'exec', name, cmd, ...args], { stdio, env: { ...process.env, ...opts?.env } });
      children.push(child);
      return child;
    },
    remove,
  };
}

/** A UDP port free on this host (the Engine's WireGuard port). */
export async function freeUDPPort(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const ok = await new Promise<boolean>((res) => {
      const s = createSocket('udp4');
      s.once('error', () => res(false));
      s.bind(port, () => s.close(() => res(true)));
    });
    if (ok) return port;
  }
  throw new Error('no free UDP port');
}

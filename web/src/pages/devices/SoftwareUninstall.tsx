// Uninstall from the Software tab: a button per row, a confirmation, then
// the job run followed until it ends (docs/api.md "Software uninstall").
// The Engine reads the device's software again after the run; the device
// page refetches its details when that inventory changes.
import { createContext, useContext, useMemo, useState, type ReactNode } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import CircularProgress from '@mui/material/CircularProgress';
import { quickRuns, software as softwareApi } from '../../api/endpoints';
import type { SoftwareItem } from '../../api/types';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useNotify } from '../../toasts/notify';
import { operationErrorToast } from './operationErrors';
import { deviceDetailsKey } from './queries';

/** How often a queued uninstall's run is asked again. */
export const uninstallPolling = { intervalMs: 1000 };

const rowKey = (s: SoftwareItem) => `${s.name}\u0000${s.version}`;

interface UninstallOps {
  running: ReadonlySet<string>;
  ask: (s: SoftwareItem) => void;
}

const UninstallContext = createContext<UninstallOps>({ running: new Set(), ask: () => {} });

export function UninstallCell({ data }: { data?: SoftwareItem }) {
  const { running, ask } = useContext(UninstallContext);
  if (!data) return null;
  const busy = running.has(rowKey(data));
  return (
    <Box sx={{ display: 'flex', alignItems: 'center', height: '100%' }}>
      <Button
        size="small"
        color="error"
        aria-label={`Uninstall ${data.name} ${data.version}`.trim()}
        disabled={busy}
        startIcon={busy ? <CircularProgress size={12} /> : undefined}
        onClick={() => ask(data)}
        sx={{ minWidth: 0, px: 1, py: 0.25 }}
      >
        {busy ? 'Uninstalling…' : 'Uninstall'}
      </Button>
    </Box>
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Asks the run until it is no longer pending or running; returns its status and the device's result. */
async function followRun(runId: string) {
  for (;;) {
    await sleep(uninstallPolling.intervalMs);
    const run = await quickRuns.get(runId);
    if (run.status !== 'pending' && run.status !== 'running') return run;
  }
}

/** Provides the Uninstall cells of a software grid with the confirmation and the follow-up. */
export function SoftwareUninstall({ hostname, children }: { hostname: string; children: ReactNode }) {
  const notify = useNotify();
  const queryClient = useQueryClient();
  const [asking, setAsking] = useState<SoftwareItem | null>(null);
  const [running, setRunning] = useState<ReadonlySet<string>>(new Set());
  const mark = (s: SoftwareItem, on: boolean) =>
    setRunning((cur) => {
      const next = new Set(cur);
      if (on) next.add(rowKey(s));
      else next.delete(rowKey(s));
      return next;
    });

  const uninstall = useMutation({
    mutationFn: async (s: SoftwareItem) => {
      const queued = await softwareApi.uninstall(hostname, { name: s.name, version: s.version || undefined });
      return followRun(queued.run_id);
    },
    onMutate: (s) => mark(s, true),
    onSettled: (_d, _e, s) => mark(s, false),
    onSuccess: (run, s) => {
      const result = run.results?.[0];
      if (run.status === 'succeeded') {
        notify({ title: `${s.name} uninstalled`, message: `Removed from ${hostname}; its software list is read again.`, icon: 'device' });
      } else {
        const why = result?.error_message || result?.stderr?.trim() || `the uninstaller ended ${run.status}`;
        notify({ title: `Uninstall ${s.name} failed`, message: why, variant: 'error', icon: 'error', ttlMs: 8000 });
      }
      void queryClient.invalidateQueries({ queryKey: deviceDetailsKey(hostname) });
    },
    onError: (error, s) => notify(operationErrorToast(error, `Uninstall ${s.name}`)),
  });

  const ops = useMemo<UninstallOps>(() => ({ running, ask: setAsking }), [running]);
  return (
    <UninstallContext.Provider value={ops}>
      {children}
      {asking && (
        <ConfirmDialog
          title={`Uninstall ${asking.name}?`}
          confirm="Uninstall"
          danger
          onConfirm={() => uninstall.mutate(asking)}
          onClose={() => setAsking(null)}
        >
          {`${asking.name}${asking.version ? ` ${asking.version}` : ''} will be removed from ${hostname} silently, with the agent's privileges. An uninstall override runs instead of the product's own uninstaller when one is set; a blocked product is refused.`}
        </ConfirmDialog>
      )}
    </UninstallContext.Provider>
  );
}

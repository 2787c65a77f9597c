// The Services tab: the inventory's service list with Start / Stop / Restart
// per row. The list comes from the device details (kept live by
// device_services_changed events); an action's answer updates its row at once
// and the details are refetched.
import { createContext, useContext, useMemo, useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColDef } from 'ag-grid-community';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import CircularProgress from '@mui/material/CircularProgress';
import { devices as devicesApi } from '../../api/endpoints';
import type { DeviceDetails, ServiceAction, ServiceItem } from '../../api/types';
import { useNotify } from '../../toasts/notify';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { InventoryGrid } from './InventoryGrid';
import { operationErrorToast } from './operationErrors';
import { NotCollected } from './parts';
import { deviceDetailsKey } from './queries';

const SERVICE_STATE_COLOR: Record<string, 'success' | 'error' | 'default'> = { running: 'success', failed: 'error' };
const STOPPED = new Set(['stopped', 'inactive', 'dead']);

export const SERVICE_ACTION_TEXT: Record<ServiceAction, { verb: string; pending: string; done: string }> = {
  start: { verb: 'Start', pending: 'Starting…', done: 'Started' },
  stop: { verb: 'Stop', pending: 'Stopping…', done: 'Stopped' },
  restart: { verb: 'Restart', pending: 'Restarting…', done: 'Restarted' },
};
const ACTIONS: ServiceAction[] = ['start', 'stop', 'restart'];

interface RowOps {
  /** The action running per service name. */
  pending: ReadonlyMap<string, ServiceAction>;
  ask: (service: ServiceItem, action: ServiceAction) => void;
}

// AG Grid renders cells inside the React tree, so the row buttons read the
// running actions from context and re-render when they change.
const RowOpsContext = createContext<RowOps>({ pending: new Map(), ask: () => {} });

function ServiceActionCell({ data }: { data?: ServiceItem }) {
  const { pending, ask } = useContext(RowOpsContext);
  if (!data) return null;
  const running = pending.get(data.name);
  return (
    <Box sx={{ display: 'flex', gap: 0.5, alignItems: 'center', height: '100%' }} role="group" aria-label={`Actions for ${data.name}`}>
      {ACTIONS.map((a) => {
        const idle = (a === 'start' && data.state === 'running') || (a === 'stop' && STOPPED.has(data.state));
        return (
          <Button
            key={a}
            size="small"
            variant="text"
            aria-label={`${SERVICE_ACTION_TEXT[a].verb} ${data.name}`}
            disabled={running !== undefined || idle}
            onClick={() => ask(data, a)}
            startIcon={running === a ? <CircularProgress size={12} /> : undefined}
            sx={{ minWidth: 0, px: 1, py: 0.25 }}
          >
            {running === a ? SERVICE_ACTION_TEXT[a].pending : SERVICE_ACTION_TEXT[a].verb}
          </Button>
        );
      })}
    </Box>
  );
}

const serviceColumns: ColDef<ServiceItem>[] = [
  { field: 'name', headerName: 'Name', flex: 1.4, minWidth: 180, sort: 'asc', cellClass: 'mono' },
  { field: 'display_name', headerName: 'Display name', flex: 1.2, minWidth: 140 },
  {
    field: 'state',
    headerName: 'State',
    width: 115,
    cellRenderer: (p: { value: string }) =>
      p.value ? (
        <Chip size="small" label={p.value} color={SERVICE_STATE_COLOR[p.value] ?? 'default'} variant="outlined" />
      ) : null,
  },
  { field: 'sub_state', headerName: 'Sub-state', width: 110 },
  { field: 'start_mode', headerName: 'Start mode', width: 115 },
  { field: 'description', headerName: 'Description', flex: 2, minWidth: 180 },
  {
    colId: 'actions',
    headerName: 'Actions',
    width: 250,
    sortable: false,
    filter: false,
    cellRenderer: ServiceActionCell,
  },
];

export function ServicesTab({ hostname, services }: { hostname: string; services: ServiceItem[] | null | undefined }) {
  const queryClient = useQueryClient();
  const notify = useNotify();
  const [pending, setPending] = useState<ReadonlyMap<string, ServiceAction>>(new Map());
  const [asking, setAsking] = useState<{ service: ServiceItem; action: ServiceAction } | null>(null);

  const track = (name: string, action: ServiceAction | null) =>
    setPending((m) => {
      const next = new Map(m);
      if (action) next.set(name, action);
      else next.delete(name);
      return next;
    });

  const mutation = useMutation({
    mutationFn: ({ name, action }: { name: string; action: ServiceAction }) =>
      devicesApi.serviceAction(hostname, name, action),
    onMutate: ({ name, action }) => track(name, action),
    onSettled: (_data, _error, { name }) => track(name, null),
    onSuccess: (result, { name, action }) => {
      const state = result?.state ?? '';
      // Show the answer now; the refetch brings the rest of the row (sub-state).
      queryClient.setQueryData<DeviceDetails>(deviceDetailsKey(hostname), (d) =>
        d?.services && state
          ? { ...d, services: d.services.map((s) => (s.name === name ? { ...s, state } : s)) }
          : d,
      );
      void queryClient.invalidateQueries({ queryKey: deviceDetailsKey(hostname) });
      notify({
        title: `${result?.name ?? name}: ${state || 'done'}`,
        message: `${SERVICE_ACTION_TEXT[action].done} on ${hostname}.`,
        icon: 'device',
      });
    },
    onError: (error, { name, action }) => notify(operationErrorToast(error, `${SERVICE_ACTION_TEXT[action].verb} ${name}`)),
  });

  const ops = useMemo<RowOps>(() => ({ pending, ask: (service, action) => setAsking({ service, action }) }), [pending]);

  if (!services) return <NotCollected what="Service inventory" />;
  return (
    <RowOpsContext.Provider value={ops}>
      <InventoryGrid<ServiceItem>
        noun="services"
        rows={services}
        columnDefs={serviceColumns}
        getRowId={(p) => p.data.name}
        emptyText="The agent reported no services."
      />
      {asking && (
        <ConfirmDialog
          title={`${SERVICE_ACTION_TEXT[asking.action].verb} ${asking.service.name}?`}
          confirm={SERVICE_ACTION_TEXT[asking.action].verb}
          danger={asking.action !== 'start'}
          onConfirm={() => mutation.mutate({ name: asking.service.name, action: asking.action })}
          onClose={() => setAsking(null)}
        >
          {asking.action === 'start' && <>The service {describe(asking.service)} is started on {hostname}.</>}
          {asking.action === 'stop' && (
            <>The service {describe(asking.service)} is stopped on {hostname}; whatever depends on it stops working.</>
          )}
          {asking.action === 'restart' && (
            <>The service {describe(asking.service)} is stopped and started again on {hostname}; it is briefly unavailable.</>
          )}{' '}
          This can take up to a minute.
        </ConfirmDialog>
      )}
    </RowOpsContext.Provider>
  );
}

function describe(s: ServiceItem) {
  return (
    <b>
      {s.name}
      {s.display_name ? ` (${s.display_name})` : ''}
    </b>
  );
}

import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableHead from '@mui/material/TableHead';
import TableRow from '@mui/material/TableRow';
import Typography from '@mui/material/Typography';
import CheckCircleOutlineIcon from '@mui/icons-material/CheckCircleOutline';
import ErrorOutlineIcon from '@mui/icons-material/ErrorOutline';
import { devices as devicesApi } from '../../api/endpoints';
import type { AgentStatus, DeviceDetails, RoleDesired, RoleHealth } from '../../api/types';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { formatDateTime } from '../../components/format';
import { useNotify } from '../../toasts/notify';
import { operationErrorToast } from './operationErrors';
import { deviceDetailsKey } from './queries';
import { RelativeTime } from './chips';
import { Facts, mono, NoneReported, Section } from './parts';
import { AGENT_CONNECTION, contextEntries, groupRoles, roleContext, roleName, stoppableRole, worstObserved } from './roles';

const OBSERVED_COLOR: Record<string, 'success' | 'warning' | 'error' | 'default'> = {
  Healthy: 'success',
  Recovering: 'warning',
  Unhealthy: 'error',
  Stopped: 'default',
};

/**
 * Stop or Start for a stoppable role (its desired state), asked first: the
 * agent refuses a stopped role's requests (role_stopped) until it is
 * started again, across restarts.
 */
function RoleControl({ hostname, row }: { hostname: string; row: RoleHealth }) {
  const role = stoppableRole(row.key);
  const queryClient = useQueryClient();
  const notify = useNotify();
  const [asking, setAsking] = useState<RoleDesired | null>(null);
  const mutation = useMutation({
    mutationFn: (desired: RoleDesired) => devicesApi.setRoleDesiredState(hostname, role ?? '', desired),
    onSuccess: (result, desired) => {
      // Show the agent's answer. No refetch now: the agent posts the new
      // state right after answering (docs/agent.md "Inventory hash"), and
      // a read racing that post would show the old row again; the page's
      // periodic refetch brings the stored one.
      queryClient.setQueryData<DeviceDetails>(deviceDetailsKey(hostname), (d) =>
        d?.roles && result
          ? { ...d, roles: d.roles.map((r) => (r.key === row.key ? { ...r, desired: result.desired, observed: result.observed } : r)) }
          : d,
      );
      notify({
        title: `${roleName(row.key)}: ${desired === 'stopped' ? 'stopped' : 'started'}`,
        message: `On ${hostname}.`,
        icon: 'device',
      });
    },
    onError: (error, desired) => notify(operationErrorToast(error, `${desired === 'stopped' ? 'Stop' : 'Start'} ${roleName(row.key)}`)),
  });
  if (!role) return null;
  const next: RoleDesired = row.desired === 'stopped' ? 'running' : 'stopped';
  const verb = next === 'stopped' ? 'Stop' : 'Start';
  return (
    <>
      <Button
        size="small"
        variant="outlined"
        color={next === 'stopped' ? 'warning' : 'primary'}
        disabled={mutation.isPending}
        aria-label={`${verb} ${roleName(row.key)}`}
        onClick={() => setAsking(next)}
      >
        {verb}
      </Button>
      {asking && (
        <ConfirmDialog
          title={`${verb} ${roleName(row.key)}?`}
          confirm={verb}
          danger={asking === 'stopped'}
          onConfirm={() => mutation.mutate(asking)}
          onClose={() => setAsking(null)}
        >
          {asking === 'stopped' ? (
            <>The agent on {hostname} refuses every request of the {roleName(row.key)} role until it is started again, also after a restart.</>
          ) : (
            <>The agent on {hostname} serves the {roleName(row.key)} role again.</>
          )}
        </ConfirmDialog>
      )}
    </>
  );
}

export function ObservedChip({ value }: { value: string | null | undefined }) {
  if (!value) return <span>—</span>;
  return <Chip size="small" label={value} color={OBSERVED_COLOR[value] ?? 'default'} variant="outlined" data-testid="observed-chip" />;
}

function ContextList({ context }: { context: Record<string, unknown> | null | undefined }) {
  const entries = contextEntries(context);
  if (entries.length === 0) return null;
  return (
    <Box component="span" sx={{ display: 'block', mt: 0.5, color: 'text.secondary', fontSize: 12 }}>
      {entries.map(([k, v]) => (
        <span key={k} style={{ marginRight: 12 }}>
          {k}: <span style={mono}>{v}</span>
        </span>
      ))}
    </Box>
  );
}

function RolesTable({ rows, label, hostname }: { rows: RoleHealth[]; label: string; hostname?: string }) {
  return (
    <Table size="small" aria-label={label}>
      <TableHead>
        <TableRow>
          <TableCell>Role</TableCell>
          <TableCell>Desired</TableCell>
          <TableCell>Observed</TableCell>
          <TableCell>Last checked</TableCell>
          <TableCell>Last healthy</TableCell>
          <TableCell align="right">Recoveries</TableCell>
          <TableCell>Last error</TableCell>
          {hostname && <TableCell>Action</TableCell>}
        </TableRow>
      </TableHead>
      <TableBody>
        {rows.map((r) => (
          <TableRow key={r.key} data-role-key={r.key}>
            <TableCell>
              <Box sx={{ fontWeight: 600 }}>{roleName(r.key)}</Box>
              <Box sx={{ ...mono, fontSize: 11, color: 'text.secondary' }}>{r.key}</Box>
              <ContextList context={roleContext(r)} />
            </TableCell>
            <TableCell>{r.desired || '—'}</TableCell>
            <TableCell>
              <ObservedChip value={r.observed} />
            </TableCell>
            <TableCell>
              <RelativeTime value={r.last_checked_at} never="—" />
            </TableCell>
            <TableCell>
              <RelativeTime value={r.last_healthy_at} never="Never" />
            </TableCell>
            <TableCell align="right">{r.recovery_attempts ?? 0}</TableCell>
            <TableCell sx={{ color: r.last_error ? 'error.main' : undefined, maxWidth: 320, wordBreak: 'break-word' }}>
              {r.last_error || '—'}
            </TableCell>
            {hostname && (
              <TableCell>
                <RoleControl hostname={hostname} row={r} />
              </TableCell>
            )}
          </TableRow>
        ))}
      </TableBody>
    </Table>
  );
}

function Milestones({ status }: { status: AgentStatus }) {
  const milestones = status.milestones ?? [];
  return (
    <Box sx={{ mt: 1.5 }}>
      <Facts
        items={[
          ['Phase', status.phase],
          ['Started', status.started_at ? formatDateTime(status.started_at) : undefined],
          ['Agent version', status.agent_version],
          ['Boot ID', status.boot_id ? <span style={mono}>{status.boot_id}</span> : undefined],
          [
            'Last error',
            status.last_error ? (
              <Box component="span" sx={{ color: 'error.main' }}>
                {status.last_error.message} ({formatDateTime(status.last_error.at)}
                {status.last_error.source ? `, ${status.last_error.source}` : ''})
              </Box>
            ) : (
              'None'
            ),
          ],
        ]}
      />
      {milestones.length > 0 && (
        <Box component="ol" aria-label="Startup milestones" sx={{ listStyle: 'none', p: 0, m: 0, mt: 1.5 }}>
          {milestones.map((m, i) => (
            <Box component="li" key={`${m.name}-${i}`} sx={{ display: 'flex', alignItems: 'flex-start', gap: 1, py: 0.4 }}>
              {m.ok ? (
                <CheckCircleOutlineIcon fontSize="small" color="success" aria-label="succeeded" />
              ) : (
                <ErrorOutlineIcon fontSize="small" color="error" aria-label="failed" />
              )}
              <Box sx={{ flex: 1, fontSize: 13 }}>
                <b>{m.name}</b>
                {m.detail && <span style={{ color: '#64748b' }}> — {m.detail}</span>}
              </Box>
              <Typography variant="caption" color="text.secondary">
                {formatDateTime(m.at)}
              </Typography>
            </Box>
          ))}
        </Box>
      )}
    </Box>
  );
}

export function AgentHealthTab({
  roles,
  lastStatus,
  hostname,
}: {
  roles: RoleHealth[] | null | undefined;
  lastStatus: AgentStatus | null | undefined;
  /** Shows Stop and Start on the stoppable roles. */
  hostname?: string;
}) {
  if (!roles || roles.length === 0) {
    return (
      <Box>
        <NoneReported>The agent has not reported role health yet. It does so with its startup timeline and inventory posts.</NoneReported>
        {lastStatus && (
          <Section title="Startup timeline">
            <Milestones status={lastStatus} />
          </Section>
        )}
      </Box>
    );
  }
  const grouped = groupRoles(roles);
  const connectionState = worstObserved(grouped.connection);
  return (
    <Box>
      <Section
        title={AGENT_CONNECTION}
        actions={connectionState ? <ObservedChip value={connectionState} /> : undefined}
      >
        {grouped.connection.length ? (
          <RolesTable rows={grouped.connection} label={`${AGENT_CONNECTION} roles`} />
        ) : (
          <NoneReported>No API WebSocket or VPN tunnel health reported yet.</NoneReported>
        )}
      </Section>
      <Section title="Startup timeline" actions={grouped.startup ? <ObservedChip value={grouped.startup.observed} /> : undefined}>
        {grouped.startup ? (
          <Box data-testid="startup-timeline">
            <Facts
              items={[
                ['Last checked', <RelativeTime value={grouped.startup.last_checked_at} never="—" />],
                ['Last healthy', <RelativeTime value={grouped.startup.last_healthy_at} />],
                ['Recoveries', String(grouped.startup.recovery_attempts ?? 0)],
                ['Last error', grouped.startup.last_error || 'None'],
                ...contextEntries(roleContext(grouped.startup)),
              ]}
            />
            {lastStatus && <Milestones status={lastStatus} />}
          </Box>
        ) : lastStatus ? (
          <Milestones status={lastStatus} />
        ) : (
          <NoneReported>No startup timeline reported yet.</NoneReported>
        )}
      </Section>
      <Section title="Roles">
        {grouped.roles.length ? (
          <RolesTable rows={grouped.roles} label="Roles" hostname={hostname} />
        ) : (
          <NoneReported>No other roles reported.</NoneReported>
        )}
      </Section>
    </Box>
  );
}

// The Software page (/software): the software audit across the devices the
// operator can see (GET /api/software/audit), paged, searched and sorted by
// the Engine. A row's device count drills down to the Devices page with a
// draft filter; its menu sets the global icon and uninstall rules.
import { useEffect, useState } from 'react';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Chip from '@mui/material/Chip';
import Dialog from '@mui/material/Dialog';
import FormControlLabel from '@mui/material/FormControlLabel';
import Switch from '@mui/material/Switch';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogContentText from '@mui/material/DialogContentText';
import DialogTitle from '@mui/material/DialogTitle';
import IconButton from '@mui/material/IconButton';
import LinearProgress from '@mui/material/LinearProgress';
import Menu from '@mui/material/Menu';
import MenuItem from '@mui/material/MenuItem';
import Paper from '@mui/material/Paper';
import Table from '@mui/material/Table';
import TableBody from '@mui/material/TableBody';
import TableCell from '@mui/material/TableCell';
import TableContainer from '@mui/material/TableContainer';
import TableHead from '@mui/material/TableHead';
import TablePagination from '@mui/material/TablePagination';
import TableRow from '@mui/material/TableRow';
import TableSortLabel from '@mui/material/TableSortLabel';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import AppsIcon from '@mui/icons-material/Apps';
import MoreVertIcon from '@mui/icons-material/MoreVert';
import RefreshIcon from '@mui/icons-material/Refresh';
import { software as softwareApi, type SoftwareRowRef } from '../../api/endpoints';
import type { SoftwareAuditRow, SoftwareAuditSort } from '../../api/types';
import { useSession } from '../../auth/session';
import { PageHeader } from '../../components/ComingSoon';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';
import { useNotify } from '../../toasts/notify';
import { SearchField } from '../../components/SearchField';

export const SOFTWARE_AUDIT_QUERY = 'software-audit';
const PAGE_SIZES = [25, 50, 100, 250, 500];
/** Typing settles this long before the Engine is asked. */
const SEARCH_DEBOUNCE_MS = 300;

/** The contract's filter tree for "devices with this row": the name, and the version when there is one. */
export function softwareFilter(row: SoftwareRowRef) {
  return {
    match: 'all',
    conditions: [
      // A blank version cannot be compared; such rows match by name.
      row.version
        ? { field: 'software', key: row.name, op: 'version_eq', value: row.version }
        : { field: 'software', key: row.name, op: 'installed' },
    ],
  };
}

/** The Devices page with the row's draft filter (it reads `filter` from the URL). */
export function devicesWithPath(row: SoftwareRowRef): string {
  return `/devices?${new URLSearchParams({ filter: JSON.stringify(softwareFilter(row)) }).toString()}`;
}

function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = window.setTimeout(() => setSettled(value), ms);
    return () => window.clearTimeout(t);
  }, [value, ms]);
  return settled;
}

type Action = 'icon' | 'uninstall-override' | 'block' | 'unblock';

const rowLabel = (r: SoftwareRowRef) => (r.version ? `${r.name} ${r.version}` : r.name);

/** Rules whose change the Engine leaves to administrators. */
const ADMIN_ONLY: ReadonlySet<Action> = new Set(['uninstall-override', 'unblock']);

export default function SoftwarePage() {
  const navigate = useNavigate();
  const isAdmin = useSession().user.role === 'admin';
  const [search, setSearch] = useState('');
  const q = useDebounced(search.trim(), SEARCH_DEBOUNCE_MS);
  const [sort, setSort] = useState<SoftwareAuditSort>('name');
  const [page, setPage] = useState(0);
  const [pageSize, setPageSize] = useState(100);
  const [menu, setMenu] = useState<{ anchor: HTMLElement; row: SoftwareAuditRow } | null>(null);
  const [action, setAction] = useState<{ kind: Action; row: SoftwareAuditRow } | null>(null);

  // A new search starts at the first page.
  useEffect(() => setPage(0), [q]);

  const params = { q, limit: pageSize, offset: page * pageSize, sort };
  const query = useQuery({
    queryKey: [SOFTWARE_AUDIT_QUERY, params],
    queryFn: () => softwareApi.audit(params),
    placeholderData: keepPreviousData,
  });
  const rows = query.data?.software ?? [];
  const total = query.data?.total ?? 0;

  const sortBy = (column: 'name' | 'device_count') => {
    setPage(0);
    setSort((s) => {
      if (column === 'name') return s === 'name' ? '-name' : 'name';
      // Most installed first on the first click.
      return s === '-device_count' ? 'device_count' : '-device_count';
    });
  };
  const nameDir = sort === 'name' ? 'asc' : sort === '-name' ? 'desc' : false;
  const countDir = sort === 'device_count' ? 'asc' : sort === '-device_count' ? 'desc' : false;

  return (
    <Box>
      <PageHeader
        title="Software"
        subtitle="Software installed on the devices you can see, by name and version. Counts are devices; open a count to list them."
        actions={
          <Tooltip title="Refresh">
            <span>
              <IconButton aria-label="Refresh software" onClick={() => void query.refetch()} disabled={query.isFetching}>
                <RefreshIcon />
              </IconButton>
            </span>
          </Tooltip>
        }
      />
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 2, mb: 1.25, flexWrap: 'wrap' }}>
        {/* docs/api.md: q is at most 256 characters. */}
        <SearchField label="Search software" value={search} onChange={setSearch} minWidth={300} htmlInput={{ maxLength: 256 }} />
        {query.data && (
          <Typography variant="body2" color="text.secondary" data-testid="software-total">
            {total} {total === 1 ? 'row' : 'rows'}
            {q ? ` matching “${q}”` : ''}
          </Typography>
        )}
      </Box>
      {query.isError && <ErrorAlert error={query.error} />}
      <Paper variant="outlined">
        <Box sx={{ height: 4 }}>{query.isFetching && <LinearProgress aria-label="Loading software" />}</Box>
        <TableContainer sx={{ maxHeight: 640 }}>
          <Table size="small" stickyHeader aria-label="Software audit">
            <TableHead>
              <TableRow>
                <TableCell sx={{ width: 40 }} />
                <TableCell sortDirection={nameDir}>
                  <TableSortLabel active={nameDir !== false} direction={nameDir || 'asc'} onClick={() => sortBy('name')}>
                    Name
                  </TableSortLabel>
                </TableCell>
                <TableCell>Version</TableCell>
                <TableCell>Publisher</TableCell>
                <TableCell align="right" sortDirection={countDir}>
                  <TableSortLabel
                    active={countDir !== false}
                    direction={countDir || 'desc'}
                    onClick={() => sortBy('device_count')}
                  >
                    Devices
                  </TableSortLabel>
                </TableCell>
                <TableCell>Uninstall</TableCell>
                <TableCell sx={{ width: 56 }} />
              </TableRow>
            </TableHead>
            <TableBody>
              {rows.map((r) => (
                <TableRow key={`${r.name}\u0000${r.version}`} hover data-testid="software-row">
                  <TableCell>
                    {r.icon_hash ? (
                      <Box component="img" src={softwareApi.iconUrl(r.icon_hash)} alt="" sx={{ width: 20, height: 20, display: 'block' }} />
                    ) : (
                      <AppsIcon fontSize="small" color="disabled" />
                    )}
                  </TableCell>
                  <TableCell sx={{ fontWeight: 500 }}>{r.name}</TableCell>
                  <TableCell sx={{ fontFamily: 'monospace', fontSize: 12.5 }}>{r.version || '—'}</TableCell>
                  <TableCell>{r.publisher || '—'}</TableCell>
                  <TableCell align="right">
                    <Tooltip title="List these devices">
                      <Button
                        size="small"
                        aria-label={`Devices with ${rowLabel(r)}`}
                        onClick={() => navigate(devicesWithPath(r))}
                        sx={{ minWidth: 0 }}
                      >
                        {r.device_count}
                      </Button>
                    </Tooltip>
                  </TableCell>
                  <TableCell>
                    <Box sx={{ display: 'flex', gap: 0.5 }}>
                      {r.uninstall_blocked && <Chip size="small" color="error" variant="outlined" label="Blocked" />}
                      {r.uninstall_override && <Chip size="small" variant="outlined" label="Custom command" />}
                    </Box>
                  </TableCell>
                  <TableCell>
                    <IconButton
                      size="small"
                      aria-label={`Actions for ${rowLabel(r)}`}
                      onClick={(e) => setMenu({ anchor: e.currentTarget, row: r })}
                    >
                      <MoreVertIcon fontSize="small" />
                    </IconButton>
                  </TableCell>
                </TableRow>
              ))}
              {query.data && rows.length === 0 && (
                <TableRow>
                  <TableCell colSpan={7} sx={{ color: 'text.secondary', py: 3, textAlign: 'center' }}>
                    {q ? 'No software matches the search.' : 'No software inventory from your devices yet.'}
                  </TableCell>
                </TableRow>
              )}
            </TableBody>
          </Table>
        </TableContainer>
        <TablePagination
          component="div"
          count={total}
          page={total === 0 ? 0 : Math.min(page, Math.max(0, Math.ceil(total / pageSize) - 1))}
          onPageChange={(_, p) => setPage(p)}
          rowsPerPage={pageSize}
          rowsPerPageOptions={PAGE_SIZES}
          onRowsPerPageChange={(e) => {
            setPageSize(Number(e.target.value));
            setPage(0);
          }}
        />
      </Paper>
      <Menu anchorEl={menu?.anchor} open={menu !== null} onClose={() => setMenu(null)}>
        {menu &&
          (
            [
              ['icon', 'Set icon…'],
              ['uninstall-override', 'Set uninstall command…'],
              menu.row.uninstall_blocked ? ['unblock', 'Allow uninstall…'] : ['block', 'Block uninstall…'],
            ] as [Action, string][]
          )
            .filter(([a]) => isAdmin || !ADMIN_ONLY.has(a))
            .map(([a, text]) => (
              <MenuItem key={a} onClick={() => pick(a)}>
                {text}
              </MenuItem>
            ))}
      </Menu>
      {action && <ActionDialog kind={action.kind} row={action.row} onClose={() => setAction(null)} />}
    </Box>
  );

  function pick(kind: Action) {
    if (menu) setAction({ kind, row: menu.row });
    setMenu(null);
  }
}

const TITLES: Record<Action, string> = {
  icon: 'Icon of',
  'uninstall-override': 'Uninstall command of',
  block: 'Block uninstalling',
  unblock: 'Allow uninstalling',
};

/** docs/api.md "Icons": the Engine refuses larger images. */
export const ICON_MAX_BYTES = 262_144;

type IconMode = 'upload' | 'display_icon' | 'clear_icon' | 'remove';
type Scope = 'version' | 'all';

function readBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result ?? '');
      resolve(url.slice(url.indexOf(',') + 1));
    };
    reader.onerror = () => reject(reader.error ?? new Error('the file could not be read'));
    reader.readAsDataURL(file);
  });
}

/**
 * One override or blocklist action. Rules are global, but the routes make
 * them from a device's row, so the dialog first finds a visible device that
 * has it.
 */
function ActionDialog({ kind, row, onClose }: { kind: Action; row: SoftwareAuditRow; onClose: () => void }) {
  const queryClient = useQueryClient();
  const notify = useNotify();
  const [iconMode, setIconMode] = useState<IconMode>('upload');
  const [file, setFile] = useState<File | null>(null);
  const [displayIcon, setDisplayIcon] = useState('');
  const [removeOverride, setRemoveOverride] = useState(false);
  const [executable, setExecutable] = useState('');
  const [args, setArgs] = useState('');
  const [reason, setReason] = useState('');
  // Icons belong to the product: the Engine ignores the version for them.
  const [scope, setScope] = useState<Scope>(kind === 'icon' ? 'all' : 'version');
  const ref: SoftwareRowRef = scope === 'version' ? { name: row.name, version: row.version } : { name: row.name };

  const mutation = useMutation({
    mutationFn: async () => {
      const device = await softwareApi.deviceWith(softwareFilter(ref));
      if (!device) throw new Error(`No device you can see has ${rowLabel(ref)} any more.`);
      switch (kind) {
        case 'icon':
          return softwareApi.iconOverride(
            device.hostname,
            ref,
            iconMode === 'upload'
              ? { icon: await readBase64(file!) }
              : iconMode === 'display_icon'
                ? { display_icon: displayIcon.trim() }
                : iconMode === 'clear_icon'
                  ? { clear_icon: true }
                  : { remove: true },
          );
        case 'uninstall-override':
          return softwareApi.uninstallOverride(
            device.hostname,
            ref,
            removeOverride ? { remove: true } : { executable: executable.trim(), arguments: args.trim() },
          );
        case 'block':
          return softwareApi.block(device.hostname, ref, reason.trim());
        case 'unblock':
          return softwareApi.unblock(device.hostname, ref);
      }
    },
    onSuccess: (answer) => {
      void queryClient.invalidateQueries({ queryKey: [SOFTWARE_AUDIT_QUERY] });
      const refresh = (answer as { refresh?: { requested?: boolean } } | undefined)?.refresh;
      notify({
        title: `${TITLES[kind]} ${rowLabel(ref)}: saved`,
        message:
          kind === 'icon' && refresh && !refresh.requested
            ? 'The rule applies on every device; the device could not refresh its software inventory now.'
            : 'The rule applies on every device.',
        icon: 'info',
      });
      onClose();
    },
  });

  const err = (field: string) => fieldError(mutation.error, field);
  const iconTooBig = file !== null && file.size > ICON_MAX_BYTES;
  const ready =
    kind === 'icon'
      ? iconMode === 'upload'
        ? file !== null && !iconTooBig
        : iconMode === 'display_icon'
          ? displayIcon.trim() !== ''
          : true
      : kind === 'uninstall-override'
        ? removeOverride || executable.trim() !== ''
        : kind === 'block'
          ? reason.trim() !== ''
          : true;
  const shownFields = { icon: ['icon', 'display_icon'], 'uninstall-override': ['executable', 'arguments'], block: ['reason'], unblock: [] }[
    kind
  ];

  return (
    <Dialog open onClose={mutation.isPending ? undefined : onClose} fullWidth maxWidth="sm" aria-labelledby="software-action-title">
      <DialogTitle id="software-action-title">
        {TITLES[kind]} {rowLabel({ name: row.name, version: row.version })}
      </DialogTitle>
      <DialogContent>
        <ErrorAlert error={mutation.error} fields={shownFields} />
        {kind !== 'icon' && row.version && (
          <TextField
            select
            fullWidth
            label="Applies to"
            value={scope}
            onChange={(e) => setScope(e.target.value as Scope)}
            sx={{ mt: 1, mb: 2 }}
          >
            <MenuItem value="version">Version {row.version} only</MenuItem>
            <MenuItem value="all">Every version of {row.name}</MenuItem>
          </TextField>
        )}
        {kind === 'icon' && (
          <>
            <DialogContentText sx={{ fontSize: 14, mb: 1.5 }}>
              The icon of {row.name}, every version, on every device. Devices that have it refresh their software inventory.
            </DialogContentText>
            <TextField
              select
              fullWidth
              label="Icon"
              value={iconMode}
              onChange={(e) => setIconMode(e.target.value as IconMode)}
              sx={{ mb: 2 }}
            >
              <MenuItem value="upload">Upload an image (PNG, ICO or SVG)</MenuItem>
              <MenuItem value="display_icon">An icon file on the device</MenuItem>
              <MenuItem value="clear_icon">No icon</MenuItem>
              <MenuItem value="remove">Remove the override (the device’s own icon)</MenuItem>
            </TextField>
            {iconMode === 'upload' && (
              <>
                <Button variant="outlined" component="label">
                  Choose image…
                  <input
                    hidden
                    type="file"
                    accept="image/png,image/svg+xml,image/x-icon,image/vnd.microsoft.icon,.ico"
                    aria-label="Icon image"
                    onChange={(e) => setFile(e.target.files?.[0] ?? null)}
                  />
                </Button>
                <Typography variant="body2" sx={{ mt: 1 }} color={err('icon') || iconTooBig ? 'error' : 'text.secondary'}>
                  {err('icon') ??
                    (iconTooBig
                      ? `${file.name} is ${file.size} bytes; an icon is at most ${ICON_MAX_BYTES} bytes.`
                      : file
                        ? `${file.name} (${file.size} bytes)`
                        : 'No image chosen.')}
                </Typography>
              </>
            )}
            {iconMode === 'display_icon' && (
              <TextField
                fullWidth
                label="Icon path on the device"
                placeholder="C:\Program Files\App\app.exe,0"
                value={displayIcon}
                onChange={(e) => setDisplayIcon(e.target.value)}
                error={Boolean(err('display_icon'))}
                helperText={err('display_icon') ?? 'An absolute path to an .ico, .exe, .dll or .png file, optionally with ,<index>.'}
              />
            )}
          </>
        )}
        {kind === 'uninstall-override' && (
          <>
            <FormControlLabel
              control={<Switch checked={removeOverride} onChange={(e) => setRemoveOverride(e.target.checked)} />}
              label="Remove the override (use the software’s own uninstaller)"
              sx={{ mb: 1 }}
            />
            {!removeOverride && (
              <>
                <TextField
                  autoFocus
                  fullWidth
                  label="Executable"
                  placeholder="msiexec.exe or C:\Program Files\App\uninstall.exe"
                  value={executable}
                  onChange={(e) => setExecutable(e.target.value)}
                  error={Boolean(err('executable'))}
                  helperText={err('executable') ?? 'An absolute path, or msiexec.exe.'}
                  sx={{ mb: 2, '& input': { fontFamily: 'monospace' } }}
                />
                <TextField
                  fullWidth
                  label="Arguments"
                  value={args}
                  onChange={(e) => setArgs(e.target.value)}
                  error={Boolean(err('arguments'))}
                  helperText={err('arguments') ?? 'One line; runs on every site’s devices when this software is uninstalled.'}
                  sx={{ '& input': { fontFamily: 'monospace' } }}
                />
              </>
            )}
          </>
        )}
        {kind === 'block' && (
          <TextField
            autoFocus
            fullWidth
            multiline
            minRows={2}
            label="Reason"
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            error={Boolean(err('reason'))}
            helperText={err('reason') ?? 'Why uninstalling it is unsafe; operators see it when an uninstall is refused.'}
          />
        )}
        {kind === 'unblock' && (
          <DialogContentText sx={{ fontSize: 14 }}>
            Operators can uninstall {rowLabel(ref)} from devices again.
          </DialogContentText>
        )}
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose} disabled={mutation.isPending}>
          Cancel
        </Button>
        <Button
          variant="contained"
          color={kind === 'block' ? 'error' : 'primary'}
          disabled={!ready || mutation.isPending}
          onClick={() => mutation.mutate()}
        >
          {mutation.isPending ? 'Saving…' : kind === 'block' ? 'Block' : kind === 'unblock' ? 'Allow' : 'Save'}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

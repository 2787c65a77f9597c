// Saved views of the devices grid (/api/device_list_views): columns, sort and
// filter under a name, per operator, optionally shared. Picking one restores
// it; the owner (or an Admin) may update or delete it.
import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import Checkbox from '@mui/material/Checkbox';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import FormControlLabel from '@mui/material/FormControlLabel';
import IconButton from '@mui/material/IconButton';
import MenuItem from '@mui/material/MenuItem';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import DeleteOutlineIcon from '@mui/icons-material/DeleteOutline';
import SaveOutlinedIcon from '@mui/icons-material/SaveOutlined';
import { ApiError } from '../../api/client';
import { deviceListViews } from '../../api/endpoints';
import type { DeviceListView, DeviceListViewInput, User } from '../../api/types';
import { describeError } from '../../components/errors';
import { ErrorAlert } from '../../components/ErrorAlert';
import { useNotify } from '../../toasts/notify';
import { ConfirmDialog } from '../../components/ConfirmDialog';

export const DEVICE_VIEWS_QUERY = ['device-list-views'] as const;

/** The grid's state a view stores (everything but name and sharing). */
export type ViewState = Omit<DeviceListViewInput, 'name' | 'shared'>;

interface Props {
  user: User;
  current: ViewState;
  selectedId: number | null;
  onSelect: (view: DeviceListView | null) => void;
}

export const canChange = (user: User, v: DeviceListView) => v.owner === user.username || user.role === 'admin';

export function ViewsBar({ user, current, selectedId, onSelect }: Props) {
  const queryClient = useQueryClient();
  const notify = useNotify();
  const views = useQuery({ queryKey: DEVICE_VIEWS_QUERY, queryFn: deviceListViews.list });
  const [saving, setSaving] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const selected = views.data?.find((v) => v.id === selectedId) ?? null;

  const remove = useMutation({
    mutationFn: (id: number) => deviceListViews.remove(id),
    onSuccess: () => {
      onSelect(null);
      void queryClient.invalidateQueries({ queryKey: DEVICE_VIEWS_QUERY });
    },
    onError: (e) => notify({ title: 'Could not delete the view', message: describeError(e), variant: 'error' }),
  });

  return (
    <Box sx={{ display: 'flex', gap: 0.5, alignItems: 'center' }}>
      <TextField
        select
        size="small"
        label="View"
        value={selected ? selected.id : ''}
        onChange={(e) => onSelect(views.data?.find((v) => v.id === Number(e.target.value)) ?? null)}
        sx={{ minWidth: 200 }}
        error={views.isError}
        helperText={views.isError ? describeError(views.error) : undefined}
      >
        <MenuItem value="">Default view</MenuItem>
        {(views.data ?? []).map((v) => (
          <MenuItem key={v.id} value={v.id}>
            {v.name}
            {v.owner !== user.username && ` (shared by ${v.owner})`}
            {v.owner === user.username && v.shared && ' (shared)'}
          </MenuItem>
        ))}
      </TextField>
      <Tooltip title="Save view">
        <IconButton aria-label="Save view" onClick={() => setSaving(true)}>
          <SaveOutlinedIcon />
        </IconButton>
      </Tooltip>
      {selected && canChange(user, selected) && (
        <Tooltip title="Delete view">
          <IconButton aria-label="Delete view" onClick={() => setDeleting(true)} disabled={remove.isPending}>
            <DeleteOutlineIcon />
          </IconButton>
        </Tooltip>
      )}
      {saving && (
        <SaveViewDialog
          editable={selected && canChange(user, selected) ? selected : null}
          current={current}
          onClose={() => setSaving(false)}
          onSaved={(v) => {
            setSaving(false);
            void queryClient.invalidateQueries({ queryKey: DEVICE_VIEWS_QUERY });
            onSelect(v);
            notify({ title: `Saved the view ${v.name}`, message: v.shared ? 'Other operators can pick it too.' : 'Pick it from View to restore it.' });
          }}
        />
      )}
      {deleting && selected && (
        <ConfirmDialog
          title={`Delete the view ${selected.name}?`}
          confirm="Delete view"
          danger
          onConfirm={() => remove.mutate(selected.id)}
          onClose={() => setDeleting(false)}
        >
          {selected.shared ? 'Other operators who use this shared view lose it too.' : 'Only the view goes; devices and filters stay.'}
        </ConfirmDialog>
      )}
    </Box>
  );
}

function SaveViewDialog({
  editable,
  current,
  onClose,
  onSaved,
}: {
  editable: DeviceListView | null;
  current: ViewState;
  onClose: () => void;
  onSaved: (v: DeviceListView) => void;
}) {
  const [name, setName] = useState(editable?.name ?? '');
  const [shared, setShared] = useState(editable?.shared ?? false);
  const save = useMutation({
    mutationFn: (id: number | null) => {
      const input: DeviceListViewInput = { ...current, name: name.trim(), shared };
      return id ? deviceListViews.update(id, input) : deviceListViews.create(input);
    },
    onSuccess: onSaved,
  });
  const err = save.error;
  const fieldErr = (k: string) => (err instanceof ApiError ? err.fields[k] : undefined);
  const conflict = err instanceof ApiError && err.code === 'conflict';
  const named = Boolean(fieldErr('name')) || conflict;
  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="xs" aria-labelledby="save-view-title">
      <DialogTitle id="save-view-title">{editable ? `Save view ${editable.name}` : 'Save view'}</DialogTitle>
      <DialogContent sx={{ display: 'flex', flexDirection: 'column', gap: 1.5, pt: '8px !important' }}>
        <TextField
          label="Name"
          value={name}
          autoFocus
          onChange={(e) => setName(e.target.value)}
          error={named}
          helperText={conflict ? 'You already have a view with this name.' : fieldErr('name')}
          slotProps={{ htmlInput: { maxLength: 120 } }}
        />
        <FormControlLabel
          control={<Checkbox checked={shared} onChange={(e) => setShared(e.target.checked)} />}
          label="Share with other operators"
        />
        {err && !named && <ErrorAlert error={err} />}
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Cancel</Button>
        {editable && (
          <Button onClick={() => save.mutate(null)} disabled={save.isPending || !name.trim() || name.trim() === editable.name}>
            Save as new
          </Button>
        )}
        <Button variant="contained" onClick={() => save.mutate(editable?.id ?? null)} disabled={save.isPending || !name.trim()}>
          {editable ? 'Update view' : 'Save'}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

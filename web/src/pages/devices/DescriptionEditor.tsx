import { useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import IconButton from '@mui/material/IconButton';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import EditIcon from '@mui/icons-material/Edit';
import { devices as devicesApi } from '../../api/endpoints';
import type { DeviceDetails } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { fieldError } from '../../components/errors';
import { DEVICES_QUERY, deviceDetailsKey } from './queries';

/** The operator-set description, edited in place. */
export function DescriptionEditor({ hostname, description }: { hostname: string; description: string }) {
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState(false);
  const [value, setValue] = useState(description);
  const mutation = useMutation({
    mutationFn: (text: string) => devicesApi.setDescription(hostname, text),
    onSuccess: (_, text) => {
      queryClient.setQueryData<DeviceDetails>(deviceDetailsKey(hostname), (d) =>
        d ? { ...d, device: { ...d.device, description: text } } : d,
      );
      void queryClient.invalidateQueries({ queryKey: deviceDetailsKey(hostname) });
      void queryClient.invalidateQueries({ queryKey: DEVICES_QUERY });
      setEditing(false);
    },
  });

  if (!editing) {
    return (
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 0.5 }}>
        <Typography
          variant="body2"
          color={description ? 'text.primary' : 'text.secondary'}
          data-testid="device-description"
          sx={{ fontStyle: description ? 'normal' : 'italic' }}
        >
          {description || 'No description'}
        </Typography>
        <Tooltip title="Edit description">
          <IconButton
            size="small"
            aria-label="Edit description"
            onClick={() => {
              setValue(description);
              mutation.reset();
              setEditing(true);
            }}
          >
            <EditIcon fontSize="small" />
          </IconButton>
        </Tooltip>
      </Box>
    );
  }

  const submit = (e: FormEvent) => {
    e.preventDefault();
    mutation.mutate(value.trim());
  };
  const err = fieldError(mutation.error, 'description');
  return (
    <Box component="form" noValidate onSubmit={submit} sx={{ maxWidth: 640 }}>
      <ErrorAlert error={mutation.error} fields={['description']} />
      <Box sx={{ display: 'flex', gap: 1, alignItems: 'flex-start' }}>
        <TextField
          label="Description"
          name="description"
          autoFocus
          fullWidth
          value={value}
          onChange={(e) => setValue(e.target.value)}
          error={Boolean(err)}
          helperText={err ?? 'Shown in the device list. Leave empty to clear it.'}
          onKeyDown={(e) => {
            if (e.key === 'Escape') setEditing(false);
          }}
        />
        <Button type="submit" variant="contained" disabled={mutation.isPending} sx={{ mt: 0.25 }}>
          {mutation.isPending ? 'Saving…' : 'Save'}
        </Button>
        <Button onClick={() => setEditing(false)} disabled={mutation.isPending} sx={{ mt: 0.25 }}>
          Cancel
        </Button>
      </Box>
    </Box>
  );
}

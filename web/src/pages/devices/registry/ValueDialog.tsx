import { useState } from 'react';
import Button from '@mui/material/Button';
import Dialog from '@mui/material/Dialog';
import DialogActions from '@mui/material/DialogActions';
import DialogContent from '@mui/material/DialogContent';
import DialogTitle from '@mui/material/DialogTitle';
import MenuItem from '@mui/material/MenuItem';
import TextField from '@mui/material/TextField';
import type { Schema } from '../../../api/typed';
import { editText, isWritable, parseData, WRITABLE_TYPES, type WritableType } from './valueData';

type RegistryValue = Schema<'RegistryValue'>;

const HELP: Record<WritableType, string> = {
  REG_SZ: 'Text.',
  REG_EXPAND_SZ: 'Text; %VARIABLES% are expanded by the program that reads it.',
  REG_MULTI_SZ: 'One string a line; no empty lines.',
  REG_DWORD: 'A 32-bit number, decimal or 0x hexadecimal.',
  REG_QWORD: 'A 64-bit number, decimal or 0x hexadecimal.',
  REG_BINARY: 'Bytes as hexadecimal pairs, e.g. 00 ff 10.',
};

/** Creates a value (existing undefined) or edits one, checking the data against its type. */
export function ValueDialog({
  keyPath,
  existing,
  busy,
  onSave,
  onClose,
}: {
  keyPath: string;
  existing?: RegistryValue;
  busy: boolean;
  onSave: (value: RegistryValue) => void;
  onClose: () => void;
}) {
  const [name, setName] = useState(existing?.name ?? '');
  const [type, setType] = useState<WritableType>(existing && isWritable(existing.type) ? existing.type : 'REG_SZ');
  const [text, setText] = useState(existing ? editText(existing.data) : '');
  const [touched, setTouched] = useState(false);
  const parsed = parseData(type, text);
  const dataError = 'error' in parsed ? parsed.error : null;
  const nameError = name.length > 16383 ? 'A value name is at most 16383 characters.' : null;
  const title = existing ? `Edit value ${existing.name || '(Default)'}` : `New value in ${keyPath}`;

  return (
    <Dialog open onClose={onClose} fullWidth maxWidth="sm">
      <DialogTitle>{title}</DialogTitle>
      <DialogContent sx={{ display: 'flex', flexDirection: 'column', gap: 2, pt: '8px !important' }}>
        <TextField
          label="Name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          disabled={!!existing}
          helperText={nameError ?? 'Leave empty for the key’s default value.'}
          error={!!nameError}
          size="small"
        />
        <TextField
          select
          label="Type"
          value={type}
          onChange={(e) => setType(e.target.value as WritableType)}
          helperText={HELP[type]}
          size="small"
        >
          {WRITABLE_TYPES.map((t) => (
            <MenuItem key={t} value={t}>
              {t}
            </MenuItem>
          ))}
        </TextField>
        <TextField
          label="Data"
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            setTouched(true);
          }}
          multiline={type === 'REG_MULTI_SZ' || type === 'REG_BINARY'}
          minRows={type === 'REG_MULTI_SZ' ? 4 : undefined}
          error={touched && !!dataError}
          helperText={touched && dataError ? dataError : ' '}
          size="small"
          slotProps={{ htmlInput: { 'aria-label': 'Data', spellCheck: false } }}
        />
      </DialogContent>
      <DialogActions>
        <Button onClick={onClose}>Cancel</Button>
        <Button
          variant="contained"
          disabled={busy || !!dataError || !!nameError}
          onClick={() => {
            if ('data' in parsed) onSave({ name, type, data: parsed.data });
          }}
        >
          {existing ? 'Save' : 'Create'}
        </Button>
      </DialogActions>
    </Dialog>
  );
}

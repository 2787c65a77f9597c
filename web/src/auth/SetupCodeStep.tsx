import { useState, type FormEvent } from 'react';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import TextField from '@mui/material/TextField';

/**
 * Wizard step 0: the one-time setup code `cairn serve` printed to its
 * terminal and log. Setup refuses anyone without it, so whoever reaches a
 * fresh Engine first does not own it. The code is checked by the next
 * step; a refused code brings the operator back here (`refused`).
 */
export function SetupCodeStep({ refused, onCode }: { refused: boolean; onCode: (code: string) => void }) {
  const [code, setCode] = useState('');
  const [error, setError] = useState<string | null>(null);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const trimmed = code.trim();
    if (!trimmed) {
      setError('Enter the setup code.');
      return;
    }
    onCode(trimmed);
  };

  const shown = error ?? (refused ? 'That setup code was not accepted. Check it and enter it again.' : null);
  return (
    <Box component="form" noValidate onSubmit={submit}>
      <Alert severity="info" variant="outlined" sx={{ mb: 2 }}>
        When it started, <code>cairn serve</code> printed a line <code>Setup code: …</code> to its terminal and log,
        and saved the code in the file <code>setup-code</code> in its data directory. Only someone with access to the
        server can read it.
      </Alert>
      <TextField
        label="Setup code"
        name="setup_code"
        autoComplete="off"
        autoFocus
        fullWidth
        value={code}
        onChange={(e) => {
          setCode(e.target.value);
          setError(null);
        }}
        error={Boolean(shown)}
        helperText={shown ?? 'For example ABCDE-FGHIJ-KLMNO-PQRST. Case and dashes do not matter.'}
        sx={{ mb: 1 }}
      />
      <Button type="submit" variant="contained" fullWidth>
        Continue
      </Button>
    </Box>
  );
}

import type { ReactNode } from 'react';
import Box from '@mui/material/Box';
import Paper from '@mui/material/Paper';
import Step from '@mui/material/Step';
import StepLabel from '@mui/material/StepLabel';
import Stepper from '@mui/material/Stepper';
import Typography from '@mui/material/Typography';
import { CairnMark } from '../components/CairnMark';

export interface WizardSteps {
  labels: string[];
  active: number;
}

/** The centred card every pre-sign-in screen uses, with the wizard stepper above it. */
export function AuthShell({
  title,
  subtitle,
  steps,
  children,
  width = 460,
}: {
  title: string;
  subtitle?: ReactNode;
  steps?: WizardSteps;
  children: ReactNode;
  width?: number;
}) {
  return (
    <Box
      sx={{
        minHeight: '100vh',
        bgcolor: 'background.default',
        display: 'flex',
        flexDirection: 'column',
        alignItems: 'center',
        pt: { xs: 4, md: 8 },
        px: 2,
        pb: 4,
      }}
    >
      <Box sx={{ display: 'flex', alignItems: 'center', gap: 1.25, mb: 3 }}>
        <CairnMark size={34} />
        <Typography variant="h5" component="div" sx={{ fontWeight: 700, letterSpacing: 0.3 }}>
          Cairn
        </Typography>
      </Box>
      {steps && (
        <Stepper activeStep={steps.active} alternativeLabel sx={{ width: '100%', maxWidth: 640, mb: 3 }} aria-label="Setup progress">
          {steps.labels.map((label) => (
            <Step key={label}>
              <StepLabel>{label}</StepLabel>
            </Step>
          ))}
        </Stepper>
      )}
      <Paper variant="outlined" sx={{ width: '100%', maxWidth: width, p: { xs: 2.5, sm: 3.5 } }}>
        <Typography variant="h6" component="h1" sx={{ mb: subtitle ? 0.5 : 2 }}>
          {title}
        </Typography>
        {subtitle && (
          <Typography variant="body2" color="text.secondary" component="div" sx={{ mb: 2.5 }}>
            {subtitle}
          </Typography>
        )}
        {children}
      </Paper>
    </Box>
  );
}

import { describe, expect, it } from 'vitest';
import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { useState } from 'react';
import type { ScriptLanguage } from '../../api/types';
import { findEditor, setEditorText } from '../../test/codeEditor';
import { CodeEditor } from './CodeEditor';

function Harness({ initial, language }: { initial: string; language: ScriptLanguage }) {
  const [value, setValue] = useState(initial);
  const [lang, setLang] = useState(language);
  return (
    <>
      <CodeEditor label="Body" value={value} onChange={setValue} language={lang} />
      <button onClick={() => setValue('echo replaced')}>replace</button>
      <button onClick={() => setLang('powershell')}>powershell</button>
      <output data-testid="value">{value}</output>
    </>
  );
}

describe('CodeEditor', () => {
  it('loads CodeMirror and highlights the script by its language', async () => {
    render(<Harness initial={'# say hello\necho "hello $USER"'} language="bash" />);
    const editor = await screen.findByTestId('code-editor');
    await waitFor(() => expect(editor.querySelector('.cm-content')).not.toBeNull());
    const content = editor.querySelector('.cm-content')!;
    expect(content).toHaveAttribute('aria-label', 'Body');
    expect(content).toHaveAttribute('data-language', 'bash');
    expect(content.textContent).toContain('echo "hello $USER"');
    // The highlighter wraps tokens (the comment, the string) in styled spans.
    await waitFor(() => expect(content.querySelectorAll('span[class]').length).toBeGreaterThan(1));
    const comment = [...content.querySelectorAll('span[class]')].find((s) => s.textContent === '# say hello');
    expect(comment).toBeDefined();
  });

  it('follows a value and a language set from outside', async () => {
    const user = userEvent.setup({ delay: null });
    render(<Harness initial="echo one" language="bash" />);
    const editor = await screen.findByTestId('code-editor');
    await waitFor(() => expect(editor.querySelector('.cm-content')).not.toBeNull());
    await user.click(screen.getByText('replace'));
    await waitFor(() => expect(editor.querySelector('.cm-content')!.textContent).toBe('echo replaced'));
    await user.click(screen.getByText('powershell'));
    await waitFor(() => expect(editor.querySelector('.cm-content')).toHaveAttribute('data-language', 'powershell'));
  });

  it('reports edits through onChange', async () => {
    render(<Harness initial="" language="sh" />);
    await setEditorText('Body', 'uname -a');
    await waitFor(() => expect(screen.getByTestId('value')).toHaveTextContent('uname -a'));
  });

  it('is read-only when asked', async () => {
    render(<CodeEditor label="Old body" value="echo old" language="bash" readOnly />);
    const view = await findEditor('Old body');
    expect(view.state.readOnly).toBe(true);
    expect(view.contentDOM).toHaveAttribute('contenteditable', 'false');
  });
});

import { act, screen, waitFor } from '@testing-library/react';
import { EditorView } from '@codemirror/view';

/** The CodeMirror editor named `label`, once it has loaded. */
export async function findEditor(label: string): Promise<EditorView> {
  let view: EditorView | null = null;
  await waitFor(() => {
    const content = screen.getAllByLabelText(label).find((el) => el.classList.contains('cm-content'));
    view = content ? EditorView.findFromDOM(content) : null;
    if (!view) throw new Error(`no CodeMirror editor named ${label} yet`);
    // The first load of CodeMirror in a test worker transforms many modules.
  }, { timeout: 30_000 });
  return view!;
}

/** Replaces the editor's text the way typing would: a transaction the editor's listeners see. */
export async function setEditorText(label: string, text: string): Promise<void> {
  const view = await findEditor(label);
  // In act, so React renders the change before the next event, as a browser would.
  act(() => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text }, userEvent: 'input.type' }));
}

/** Replaces an input's text in one paste: much faster than typing each key on a loaded CI machine. */
export async function fill(user: { clear: (e: Element) => Promise<void>; click: (e: Element) => Promise<void>; paste: (t: string) => Promise<void> }, input: Element, text: string) {
  await user.clear(input);
  await user.click(input);
  if (text) await user.paste(text);
}

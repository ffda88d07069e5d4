import { useRef } from 'preact/hooks';
import type { ComponentChildren } from 'preact';

interface Props {
  label: string;
  question: string;
  confirm: string;
  danger?: boolean;
  onConfirm: () => void;
  children?: ComponentChildren;
}

/** A button that asks first, in a modal `<dialog>` (focus moves in, Escape cancels). */
export function ConfirmButton({ label, question, confirm, danger, onConfirm, children }: Props) {
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <>
      <button
        type="button"
        class={danger ? 'danger' : undefined}
        onClick={() => dialog.current?.showModal()}
      >
        {label}
      </button>
      <dialog ref={dialog} aria-label={question}>
        <form
          method="dialog"
          onSubmit={(e) => {
            const submitter = (e as SubmitEvent).submitter as HTMLButtonElement | null;
            if (submitter?.value === 'yes') onConfirm();
          }}
        >
          <p>{question}</p>
          {children}
          <div class="row">
            <button value="no" autofocus>
              Cancel
            </button>
            <button value="yes" class={danger ? 'danger' : 'primary'}>
              {confirm}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}

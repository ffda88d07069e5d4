import { useState } from 'preact/hooks';

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    await navigator.clipboard.writeText(text);
    setDone(true);
    setTimeout(() => setDone(false), 1_500);
  };
  return (
    <button type="button" class="ghost" onClick={copy} title={text}>
      {done ? 'Copied' : label}
    </button>
  );
}

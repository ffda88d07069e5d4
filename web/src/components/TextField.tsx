import type { JSX } from 'preact';

type Props = JSX.IntrinsicElements['input'] & {
  label: string;
  value: string;
  onValue: (value: string) => void;
};

/** An input inside its label, reporting the value after each edit; other props go to the input. */
export function TextField({ label, value, onValue, ...input }: Props) {
  return (
    <label>
      {label}
      <input {...input} value={value} onInput={(e) => onValue(e.currentTarget.value)} />
    </label>
  );
}

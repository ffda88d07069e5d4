import { TextField } from './TextField';

export interface EnvRow {
  name: string;
  value: string;
}

/** Rows of name and value for the app's environment; values are sent once and never shown again. */
export function EnvFields({
  rows,
  onChange,
  legend = 'Environment',
  hint,
}: {
  rows: EnvRow[];
  onChange: (rows: EnvRow[]) => void;
  legend?: string;
  hint?: string;
}) {
  const set = (index: number, patch: Partial<EnvRow>) =>
    onChange(rows.map((row, i) => (i === index ? { ...row, ...patch } : row)));
  return (
    <fieldset class="env">
      <legend>{legend}</legend>
      {hint ? <p class="muted">{hint}</p> : null}
      {rows.map((row, i) => (
        <div class="row" key={i}>
          <TextField
            label="Name"
            value={row.name}
            pattern="[A-Za-z_][A-Za-z0-9_]*"
            onValue={(name) => set(i, { name })}
          />
          <TextField
            label="Value"
            value={row.value}
            autocomplete="off"
            onValue={(value) => set(i, { value })}
          />
          <button
            type="button"
            class="ghost"
            aria-label={`Remove variable ${row.name || i + 1}`}
            onClick={() => onChange(rows.filter((_, j) => j !== i))}
          >
            Remove
          </button>
        </div>
      ))}
      <button type="button" onClick={() => onChange([...rows, { name: '', value: '' }])}>
        Add a variable
      </button>
    </fieldset>
  );
}

export interface EnvRow {
  name: string;
  value: string;
}

/** Rows of name and value for the app's environment; values are sent once and never shown again. */
export function EnvFields({
  rows,
  onChange,
}: {
  rows: EnvRow[];
  onChange: (rows: EnvRow[]) => void;
}) {
  const set = (index: number, patch: Partial<EnvRow>) =>
    onChange(rows.map((row, i) => (i === index ? { ...row, ...patch } : row)));
  return (
    <fieldset class="env">
      <legend>Environment</legend>
      {rows.map((row, i) => (
        <div class="row" key={i}>
          <label>
            Name
            <input
              value={row.name}
              pattern="[A-Za-z_][A-Za-z0-9_]*"
              onInput={(e) => set(i, { name: e.currentTarget.value })}
            />
          </label>
          <label>
            Value
            <input
              value={row.value}
              autocomplete="off"
              onInput={(e) => set(i, { value: e.currentTarget.value })}
            />
          </label>
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

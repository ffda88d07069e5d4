import type { ComponentChildren } from 'preact';

interface Props {
  /** The column headers, left to right. */
  columns: ComponentChildren[];
  class?: string;
  /** Read to screen readers only. */
  caption?: ComponentChildren;
  /** The body's rows. */
  children: ComponentChildren;
}

/** A table with a row of column headers, scrolling sideways on its own on a narrow screen. */
export function Table({ columns, class: className, caption, children }: Props) {
  return (
    <div class="table-wrap">
      <table class={className}>
        {caption !== undefined && <caption class="sr-only">{caption}</caption>}
        <thead>
          <tr>
            {columns.map((column, i) => (
              <th key={i} scope="col">
                {column}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** What went wrong, announced to screen readers; nothing while there is nothing. */
export function Problem({ text }: { text: string | undefined }) {
  return text ? (
    <p class="error" role="alert">
      {text}
    </p>
  ) : null;
}

/** All of stdin as text (a piped key, password or dotenv), once it is closed. */
export async function readStdin(): Promise<string> {
  let text = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) text += String(chunk);
  return text;
}
